package txn_test

import (
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestSaramaTransactions drives sarama's transactional producer: committed and aborted
// transactions, read_committed and read_uncommitted consumers, and group offsets
// committed inside transactions (AddOffsetsToTxn and sarama's TxnOffsetCommit
// version): a commit moves them, an abort does not.
func TestSaramaTransactions(t *testing.T) {
	for _, v := range []sarama.KafkaVersion{sarama.V2_5_0_0, sarama.V3_6_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			topic, groupID := "sarama-txn-"+v.String(), "sarama-g-"+v.String()
			createTopic(t, topic, 1)
			cfg := sarama.NewConfig()
			cfg.Version = v
			cfg.Producer.Idempotent = true
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Return.Successes = true
			cfg.Producer.Transaction.ID = "sarama-" + v.String()
			cfg.Net.MaxOpenRequests = 1
			p, err := sarama.NewSyncProducer([]string{brokerAddr(t)}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			txn := func(commit bool, offset int64, values ...string) {
				t.Helper()
				if err := p.BeginTxn(); err != nil {
					t.Fatal(err)
				}
				for _, val := range values {
					if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(val)}); err != nil {
						t.Fatal(err)
					}
				}
				offs := map[string][]*sarama.PartitionOffsetMetadata{topic: {{Partition: 0, Offset: offset}}}
				if err := p.AddOffsetsToTxn(offs, groupID); err != nil {
					t.Fatal(err)
				}
				end := p.AbortTxn
				if commit {
					end = p.CommitTxn
				}
				if err := end(); err != nil {
					t.Fatal(err)
				}
			}
			txn(true, 3, "c0", "c1", "c2")
			txn(false, 99, "a0", "a1")
			txn(true, 7, "c3")
			if got := consume(t, topic, true, 4, 10*time.Second); strings.Join(got, ",") != "c0,c1,c2,c3" {
				t.Fatalf("read_committed saw %v", got)
			}
			if got := consume(t, topic, false, 6, 10*time.Second); len(got) != 6 {
				t.Fatalf("read_uncommitted saw %v, want the 6 records", got)
			}
			if got := committedTotal(t, groupID, topic); got != 7 {
				t.Fatalf("group offset %d, want 7 (the aborted 99 never committed)", got)
			}
		})
	}
}
