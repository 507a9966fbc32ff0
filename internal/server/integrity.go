package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/replica"
)

// integrityCollector exports what the logs found of damage (a batch failing its CRC
// below what a crash can tear) and what was repaired, at scrape time:
// runnel_corrupt_batches_total, runnel_repaired_batches_total and
// runnel_unrepairable_partitions (docs/durability.md).
type integrityCollector struct {
	logs              *log.Manager
	replicas          *replica.Manager
	corrupt, repaired *prometheus.Desc
	unrepairable      *prometheus.Desc
}

func newIntegrityCollector(logs *log.Manager, replicas *replica.Manager) *integrityCollector {
	return &integrityCollector{
		logs: logs, replicas: replicas,
		corrupt: prometheus.NewDesc("runnel_corrupt_batches_total",
			"Damaged ranges (batches failing their CRC, bad headers) this node's logs found since it started, at start-up, on reads or by the scrubber.", nil, nil),
		repaired: prometheus.NewDesc("runnel_repaired_batches_total",
			"Damaged ranges this node's logs removed since it started: fetched again from an intact replica, or dropped by runnel topic repair --accept-loss.", nil, nil),
		unrepairable: prometheus.NewDesc("runnel_unrepairable_partitions",
			"Partitions whose replica here is damaged and that this node leads with no other in-sync replica: no intact copy to repair from until one catches up, the files are restored, or an operator accepts the loss.", nil, nil),
	}
}

func (c *integrityCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.corrupt
	ch <- c.repaired
	ch <- c.unrepairable
}

func (c *integrityCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.logs.IntegrityStats()
	ch <- prometheus.MustNewConstMetric(c.corrupt, prometheus.CounterValue, float64(st.CorruptBatches))
	ch <- prometheus.MustNewConstMetric(c.repaired, prometheus.CounterValue, float64(st.RepairedBatches))
	ch <- prometheus.MustNewConstMetric(c.unrepairable, prometheus.GaugeValue, float64(c.replicas.Unrepairable()))
}
