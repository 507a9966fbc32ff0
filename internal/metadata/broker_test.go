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

func TestBrokerDiskFull(t *testing.T) {
	im := Empty().Apply(Record{Type: RegisterBrokerType, Broker: &Broker{ID: 2, Epoch: 1}}, 1)
	im = im.Apply(Record{Type: BrokerDiskType, BrokerID: 2, DiskFull: true}, 2)
	if b := im.Brokers[2]; !b.DiskFull || b.Epoch != 1 || b.RegisteredOffset != 1 {
		t.Fatalf("after disk full %+v", b)
	}
	// The flag travels through the codec (the Raft log and snapshots).
	enc, _ := Encode([]Record{{Type: BrokerDiskType, BrokerID: 2, DiskFull: true}})
	recs, err := Decode(enc)
	if err != nil || recs[0].Type != BrokerDiskType || !recs[0].DiskFull || recs[0].BrokerID != 2 {
		t.Fatalf("round trip %+v %v", recs, err)
	}
	if im2 := im.Apply(Record{Type: BrokerDiskType, BrokerID: 9, DiskFull: true}, 3); len(im2.Brokers) != 1 {
		t.Fatalf("an unknown broker was added: %+v", im2.Brokers)
	}
	im = im.Apply(Record{Type: FenceBrokerType, BrokerID: 2}, 4)
	if b := im.Brokers[2]; !b.DiskFull || !b.Fenced {
		t.Fatalf("fencing dropped the flag: %+v", b)
	}
	im = im.Apply(Record{Type: BrokerDiskType, BrokerID: 2}, 5)
	if im.Brokers[2].DiskFull {
		t.Fatal("the flag did not clear")
	}
	im = im.Apply(Record{Type: BrokerDiskType, BrokerID: 2, DiskFull: true}, 6)
	im = im.Apply(Record{Type: RegisterBrokerType, Broker: &Broker{ID: 2, Epoch: 2}}, 7)
	if im.Brokers[2].DiskFull {
		t.Fatal("a new registration kept the flag of the previous run")
	}
}

// A fence records when it happened; fencing again keeps the first time; unfencing
// clears it.
func TestBrokerFencedAt(t *testing.T) {
	im := Empty().Apply(Record{Type: RegisterBrokerType, Broker: &Broker{ID: 1, Epoch: 1}}, 1)
	im = im.Apply(Record{Type: FenceBrokerType, BrokerID: 1, AtMs: 1000}, 2)
	if b := im.Brokers[1]; !b.Fenced || b.FencedAtMs != 1000 {
		t.Fatalf("after the fence %+v, want fenced at 1000", b)
	}
	im = im.Apply(Record{Type: FenceBrokerType, BrokerID: 1, AtMs: 2000}, 3)
	if b := im.Brokers[1]; b.FencedAtMs != 1000 {
		t.Fatalf("a second fence moved the time: %+v", b)
	}
	im = im.Apply(Record{Type: UnfenceBrokerType, BrokerID: 1}, 4)
	if b := im.Brokers[1]; b.Fenced || b.FencedAtMs != 0 {
		t.Fatalf("after unfence %+v", b)
	}
}

// The mark of a broker awaiting its share stays through fencing and the codec, and a
// BrokerShareType record clears it.
func TestBrokerAwaitsShare(t *testing.T) {
	im := Empty().Apply(Record{Type: RegisterBrokerType, Broker: &Broker{ID: 4, Epoch: 1, AwaitsShare: true}}, 1)
	im = im.Apply(Record{Type: FenceBrokerType, BrokerID: 4}, 2)
	if b := im.Brokers[4]; !b.AwaitsShare || !b.Fenced {
		t.Fatalf("after fence %+v, want it still awaiting its share", b)
	}
	enc, _ := Encode([]Record{{Type: RegisterBrokerType, Broker: &Broker{ID: 4, AwaitsShare: true}}, {Type: BrokerShareType, BrokerID: 4}})
	recs, err := Decode(enc)
	if err != nil || !recs[0].Broker.AwaitsShare || recs[1].Type != BrokerShareType || recs[1].BrokerID != 4 {
		t.Fatalf("round trip %+v %v", recs, err)
	}
	im = im.Apply(recs[1], 3)
	if b := im.Brokers[4]; b.AwaitsShare || !b.Fenced || b.Epoch != 1 {
		t.Fatalf("after broker_share %+v, want only the mark cleared", b)
	}
	if im2 := im.Apply(Record{Type: BrokerShareType, BrokerID: 9}, 4); len(im2.Brokers) != 1 {
		t.Fatalf("an unknown broker was added: %+v", im2.Brokers)
	}
}
