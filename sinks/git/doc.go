// Package git is the Git snapshot backend. Each export becomes exactly one
// commit, made only when the content changed, pushed to the remote branch.
//
// Trees are built directly with go-git's object model: there is no work
// tree and no per-file `git add` (go-git's Worktree.Add rescans the whole
// tree per file). The sink keeps the tree it last pushed, reading a
// directory from its mirror only when an export first looks inside it, and
// an export edits a copy of the directories it touches (tree.go), so a
// failed export leaves nothing behind and a commit encodes again only the
// directories that changed. When the branch is where the sink left it, an
// export plans only the rows that changed since its last one, found by
// walking the two snapshots in their canonical order (plan.go); otherwise
// it plans every row and the tree drops what it already holds. The objects
// an export writes wait in memory (stage.go) and the push sends exactly
// those through a receive-pack session (push.go), instead of go-git's push,
// which walks every tree of both commits to find them. Files the sink wrote
// and no longer writes are removed, and an empty snapshot removes
// everything the sink wrote.
package git
