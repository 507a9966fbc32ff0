package clustertest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestVirtualFirstCoordinatorLookups: the first group lookups of a fresh cluster race
// to create __consumer_offsets. Each lookup goes to another node at once; the one that
// creates the topic answers with a coordinator, and so must the others, whose
// CreateTopics answers TOPIC_ALREADY_EXISTS: an admin request waits until every node
// applied what the controller holds, whatever its answers, so each finds the topic in
// its image. A COORDINATOR_NOT_AVAILABLE there fails a default kadm FetchOffsets,
// which does not look the coordinator up again (franz-go 1.22's sharded requests).
func TestVirtualFirstCoordinatorLookups(t *testing.T) {
	inVirtualTime(t, func(t *testing.T) {
		c := startVirtual(t, 3)
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				node := int32(i%3 + 1)
				// A client of that node alone: its first request goes there.
				cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(int(node)).KafkaAddr), kgo.Dialer(c.Dial()))
				if err != nil {
					errs[i] = err
					return
				}
				defer cl.Close()
				req := kmsg.NewPtrFindCoordinatorRequest()
				req.CoordinatorKeys = []string{fmt.Sprintf("group-%d", i)}
				resp, err := req.RequestWith(context.Background(), cl)
				switch {
				case err != nil:
					errs[i] = err
				case len(resp.Coordinators) != 1:
					errs[i] = fmt.Errorf("%d coordinators in the answer", len(resp.Coordinators))
				default:
					co := resp.Coordinators[0]
					if err := kerr.ErrorForCode(co.ErrorCode); err != nil {
						msg := ""
						if co.ErrorMessage != nil {
							msg = *co.ErrorMessage
						}
						errs[i] = fmt.Errorf("node %d: %w: %s", node, err, msg)
					}
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("FindCoordinator of group-%d on a fresh cluster: %v", i, err)
			}
		}
	})
}
