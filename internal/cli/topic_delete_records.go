package cli

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newTopicDeleteRecords(conn *connFlags) *cobra.Command {
	var partition int32
	var before string
	cmd := &cobra.Command{
		Use:   "delete-records NAME --partition P --before OFFSET",
		Short: "Delete a partition's records before OFFSET (DeleteRecords): its log start becomes OFFSET",
		Long: `Delete the records of one partition before OFFSET, through Kafka's DeleteRecords
(as kafka-delete-records.sh). The partition's log start offset becomes OFFSET;
--before latest (or -1) deletes every record up to the high watermark. Prints the
new log start offset.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if partition < 0 {
				return usageErrorf("--partition P is required")
			}
			at, err := parseBefore(before)
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				return deleteRecords(cmd, adm, args[0], partition, at)
			})
		},
	}
	cmd.Flags().Int32Var(&partition, "partition", -1, "the partition (required)")
	cmd.Flags().StringVar(&before, "before", "", "delete the records before this offset; latest (or -1): up to the high watermark (required)")
	return cmd
}

func parseBefore(s string) (int64, error) {
	switch s {
	case "":
		return 0, usageErrorf("--before OFFSET is required")
	case "latest", "end", "-1":
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, usageErrorf("bad --before %q: want an offset, or latest", s)
	}
	return n, nil
}

func deleteRecords(cmd *cobra.Command, adm *kadm.Client, topic string, partition int32, before int64) error {
	ctx := cmd.Context()
	td, err := topicDetail(ctx, adm, topic)
	if err != nil {
		return fmt.Errorf("delete records: %w", err)
	}
	if _, err := choosePartitions(td, partition); err != nil {
		return fmt.Errorf("delete records: %w", err)
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: partition, At: before, LeaderEpoch: -1})
	resps, err := adm.DeleteRecords(ctx, offs)
	var resp kadm.DeleteRecordsResponse
	if err == nil {
		var ok bool
		if resp, ok = resps.Lookup(topic, partition); !ok {
			err = errors.New("no answer for the partition")
		} else {
			err = resp.Err
		}
	}
	if errors.Is(err, kerr.OffsetOutOfRange) {
		return fmt.Errorf("delete records of topic %q partition %d before offset %d: the offset is past the high watermark (%w)",
			topic, partition, before, err)
	}
	if err != nil {
		return fmt.Errorf("delete records of topic %q partition %d: %w", topic, partition, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Topic %q partition %d: log start offset is now %d.\n", topic, partition, resp.LowWatermark)
	return nil
}
