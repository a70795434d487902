// Package status writes the status of targets and inventories. Two sources
// feed it: reconcilers (is the object configured, or Degraded and why) and
// the engine's reports (live row counts, what each sink acknowledged). The
// Writer merges them and patches each changed object at most once per
// flush interval, so a busy cluster does not turn into a status-write
// storm. It is the only writer of these statuses.
package status
