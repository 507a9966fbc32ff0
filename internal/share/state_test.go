package share

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestPartitionStateScripts runs testdata/*.txt against one PartitionState. Commands
// (times are seconds since the script's start, the lock duration 10 s):
//
//	new start=N [limit=D] [window=W]     a share partition at N, delivery limit D
//	acquire member=M upto=O [max=N] [at=T] [unread=F-L[,F-L...]]
//	ack member=M first=F last=L types=1[,2...] [at=T]
//	expire at=T
//	release member=M
//	advance to=N
//	restore                              through Batches and RestorePartitionState
//
// Each command prints the result and then the window: start, end and every offset's
// state, delivery count and holder.
func TestPartitionStateScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var s *PartitionState
		lim := Limits{LockDuration: 10 * time.Second, DeliveryLimit: 3, MaxInFlight: 100}
		t0 := time.Unix(1000, 0)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			arg := func(k string, dflt int64) int64 {
				for _, a := range d.CmdArgs {
					if a.Key == k {
						v, err := strconv.ParseInt(a.Vals[0], 10, 64)
						if err != nil {
							t.Fatal(err)
						}
						return v
					}
				}
				return dflt
			}
			str := func(k string) string {
				for _, a := range d.CmdArgs {
					if a.Key == k {
						return strings.Join(a.Vals, ",")
					}
				}
				return ""
			}
			at := t0.Add(time.Duration(arg("at", 0)) * time.Second)
			var out string
			switch d.Cmd {
			case "new":
				lim.DeliveryLimit = int16(arg("limit", 3))
				lim.MaxInFlight = int(arg("window", 100))
				s = NewPartitionState(arg("start", 0))
			case "acquire":
				var unread []OffsetRange
				for _, a := range d.CmdArgs {
					for _, v := range a.Vals {
						var r OffsetRange
						if a.Key == "unread" {
							if _, err := fmt.Sscanf(v, "%d-%d", &r.First, &r.Last); err != nil {
								t.Fatalf("unread=%s: %v", v, err)
							}
							unread = append(unread, r)
						}
					}
				}
				rs := s.Acquire(str("member"), arg("upto", 0), int(arg("max", 1000)), at, lim, unread)
				for _, r := range rs {
					out += fmt.Sprintf("acquired %d-%d delivery %d\n", r.First, r.Last, r.DeliveryCount)
				}
				if len(rs) == 0 {
					out = "acquired nothing\n"
				}
			case "ack":
				var types []AckType
				for _, v := range strings.Split(str("types"), ",") {
					n, _ := strconv.Atoi(v)
					types = append(types, AckType(n))
				}
				if err := s.Acknowledge(str("member"), arg("first", 0), arg("last", 0), types, at, lim); err != nil {
					out = "error: " + err.Error() + "\n"
				}
			case "expire":
				out = fmt.Sprintf("released %d\n", s.Expire(at, lim))
			case "release":
				out = fmt.Sprintf("released %d\n", s.ReleaseMember(str("member"), lim))
			case "advance":
				s.AdvanceTo(arg("to", 0))
			case "restore":
				s = RestorePartitionState(s.Start(), s.Batches())
			default:
				t.Fatalf("unknown command %s", d.Cmd)
			}
			return out + describe(s, t0)
		})
	})
}

func describe(s *PartitionState, t0 time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "start=%d end=%d\n", s.start, s.end)
	for i, r := range s.recs {
		fmt.Fprintf(&b, "  %d %s d=%d", s.start+int64(i), r.state, r.deliveries)
		if r.state == Acquired {
			fmt.Fprintf(&b, " %s until=%s", r.member, r.deadline.Sub(t0))
		}
		b.WriteString("\n")
	}
	return b.String()
}
