// Package gitlab is the GitLab snapshot backend: the Git
// sink's layout, written through GitLab's REST API v4 instead of a clone.
// An export is one commit made with the commits API (create, update and
// delete actions together), holding only the files that changed, and a
// record of the files the sink owns for the inventory, so deletes never
// touch another inventory's or another cluster's files. In merge-request
// mode the commit goes to a branch of its own and one merge request is
// opened for it, then reused.
package gitlab
