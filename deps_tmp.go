package runnel
import (
 _ "github.com/twmb/franz-go/pkg/kgo"
 _ "github.com/twmb/franz-go/pkg/kmsg"
 _ "github.com/twmb/franz-go/pkg/kerr"
 _ "github.com/twmb/franz-go/pkg/kadm"
 _ "github.com/hashicorp/raft"
 _ "github.com/hashicorp/raft-boltdb/v2"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/spf13/cobra"
 _ "github.com/IBM/sarama"
 _ "github.com/segmentio/kafka-go"
)

