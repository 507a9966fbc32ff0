package metadata

import (
	"encoding/json"
	"testing"
)

func TestClientQuotaRecordsAndSnapshot(t *testing.T) {
	rate := func(v float64) *float64 { return &v }
	alice := QuotaEntity{User: QuotaNamed("alice")}
	both := QuotaEntity{User: QuotaDefault(), ClientID: QuotaNamed("a&b=<default>")}
	emptyClient := QuotaEntity{ClientID: QuotaNamed("")}
	im := Empty()
	for _, ch := range []ClientQuotaChange{
		{Entity: alice, Key: ProducerByteRate, Value: rate(1024)},
		{Entity: both, Key: ConsumerByteRate, Value: rate(2048)},
		{Entity: emptyClient, Key: RequestPercentage, Value: rate(12.5)},
		{Entity: alice, Key: ConsumerByteRate, Value: rate(5)},
		{Entity: alice, Key: ConsumerByteRate}, // removed again
	} {
		im = im.Apply(Record{Type: ClientQuotaType, ClientQuota: &ch}, im.Offset+1)
	}
	before := im.ClientQuotas
	if again := im.Apply(Record{Type: ClientQuotaType, ClientQuota: &ClientQuotaChange{Entity: alice, Key: ProducerByteRate, Value: rate(1024)}}, 9); again.ClientQuotas != before {
		t.Fatal("a record that changes nothing made new ClientQuotas")
	}
	b, err := json.Marshal(im)
	if err != nil {
		t.Fatal(err)
	}
	var back Image
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	want := map[QuotaEntity]map[string]float64{
		alice: {ProducerByteRate: 1024}, both: {ConsumerByteRate: 2048}, emptyClient: {RequestPercentage: 12.5},
	}
	if len(back.ClientQuotas.Entities) != len(want) {
		t.Fatalf("after the round trip: %v, want %v", back.ClientQuotas.Entities, want)
	}
	for e, vals := range want {
		for k, v := range vals {
			if got, ok := back.ClientQuotas.Get(e, k); !ok || got != v {
				t.Errorf("%s %s = %v (%v), want %v; json %s", e, k, got, ok, v, b)
			}
		}
	}
	if got := both.String(); got != "user=<default>, client-id=a&b=<default>" {
		t.Errorf("String() = %q", got)
	}
}
