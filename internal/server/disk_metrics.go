package server

import (
	"path/filepath"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
)

// diskSpaceCollector is runnel_disk_usable_bytes{dir} and runnel_disk_total_bytes{dir}
// of the data directory's filesystem, read at scrape time, so that an alert can fire
// while the disk is filling, before runnel_disk_full says appends already fail. The
// numbers are DescribeLogDirs' (what `df` shows: total is used plus available, the
// blocks reserved for root left out), so the console, the balancer and the alert agree.
type diskSpaceCollector struct {
	dir           string
	usable, total *prometheus.Desc
}

func newDiskSpaceCollector(dataDir string) *diskSpaceCollector {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		dir = dataDir
	}
	labels := []string{"dir"}
	return &diskSpaceCollector{dir: dir,
		usable: prometheus.NewDesc("runnel_disk_usable_bytes", "Bytes a writer may still use on the data directory's filesystem (df's Avail).", labels, nil),
		total:  prometheus.NewDesc("runnel_disk_total_bytes", "Size of the data directory's filesystem to a writer: used plus usable (df's Size less the root reserve).", labels, nil),
	}
}

func (c *diskSpaceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.usable
	ch <- c.total
}

// Collect exports nothing when the filesystem cannot be read (the directory removed
// under the node): a missing series is what an absent() alert sees, a made-up 0 would
// read as a full disk.
func (c *diskSpaceCollector) Collect(ch chan<- prometheus.Metric) {
	var st syscall.Statfs_t
	if syscall.Statfs(c.dir, &st) != nil {
		return
	}
	unit := int64(st.Frsize)
	if unit <= 0 {
		unit = int64(st.Bsize)
	}
	usable := int64(st.Bavail) * unit
	total := int64(st.Blocks-st.Bfree)*unit + usable
	ch <- prometheus.MustNewConstMetric(c.usable, prometheus.GaugeValue, float64(usable), c.dir)
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(total), c.dir)
}
