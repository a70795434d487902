// Package git is the Git snapshot backend. Each export becomes exactly one
// commit, made only when the content changed, pushed to the remote branch.
//
// Trees are built directly with go-git's object model from the previous
// commit's tree plus the files this export renders: there is no work tree
// and no per-file `git add` (go-git's Worktree.Add rescans the whole tree
// per file). Rendered files are cached per row, so an export re-renders
// only the rows that changed. Files the sink wrote and no longer writes are
// removed, and an empty snapshot removes everything the sink wrote.
package git
