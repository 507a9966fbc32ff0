package metadata

import "testing"

func TestRegisterBrokerRecordsItsOffset(t *testing.T) {
	im := Empty().Apply(Record{Type: RegisterBrokerType, Broker: &Broker{ID: 3, Epoch: 2, Fenced: true, RegisteredOffset: 99}}, 17)
	if b := im.Brokers[3]; b.RegisteredOffset != 17 || !b.Fenced || b.Epoch != 2 {
		t.Fatalf("registered broker %+v, want offset 17 (the proposer's value is ignored)", b)
	}
	im = im.Apply(Record{Type: UnfenceBrokerType, BrokerID: 3}, 18)
	if b := im.Brokers[3]; b.RegisteredOffset != 17 || b.Fenced {
		t.Fatalf("after unfence %+v", b)
	}
}
