// Package reassignprogress measures a partition reassignment's progress from
// samples of its replicas' log sizes (DescribeLogDirs), the one way `runnel reassign
// status` (internal/cli) and the console's reassignments page (internal/console) both
// show it: the target size, what the adding replicas hold and still lack, the rate at
// which they copy between two samples, and the time left at that rate.
//
// It is a leaf: it imports nothing of the module, and does no I/O; its callers take
// the samples.
package reassignprogress
