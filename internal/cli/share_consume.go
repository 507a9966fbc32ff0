package cli

import (
	"context"
	"fmt"
	"regexp"

	"github.com/twmb/franz-go/pkg/kgo"
)

// checkShare refuses the flags --share-group cannot be used with: the broker chooses
// what a share group member reads.
func (f *consumeFlags) checkShare() error {
	if f.shareGroup == "" {
		return nil
	}
	switch {
	case f.group != "":
		return usageErrorf("--share-group and --group cannot be used together")
	case f.partition >= 0 || f.offset != "" || f.fromBeginning:
		return usageErrorf("--partition, --offset and --from-beginning cannot be used with --share-group (a new share group starts at its share.auto.offset.reset group config)")
	case f.isolation != "read_uncommitted":
		return usageErrorf("--isolation cannot be used with --share-group (the group's share.isolation.level decides)")
	}
	return nil
}

// shareConsumeOpts consumes the topics as a member of the share group (franz-go's
// share consumer, KIP-932).
func shareConsumeOpts(f *consumeFlags, topics []string, patterns []*regexp.Regexp) []kgo.Opt {
	if patterns != nil {
		anchored := make([]string, len(patterns))
		for i, re := range patterns {
			anchored[i] = re.String()
		}
		return []kgo.Opt{kgo.ShareGroup(f.shareGroup), kgo.ConsumeTopics(anchored...), kgo.ConsumeRegex()}
	}
	return []kgo.Opt{kgo.ShareGroup(f.shareGroup), kgo.ConsumeTopics(topics...)}
}

// flushAcks sends the acknowledgements of the printed records of a share group
// member, even after an interrupt: an acknowledged record is never delivered again.
func (c *consumer) flushAcks() error {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	if err := c.cl.FlushAcks(ctx); err != nil {
		return fmt.Errorf("acknowledge records of share group %q: %w", c.shareGroup, err)
	}
	return nil
}
