package controller

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/vfs"
)

// metaPropertiesName is Kafka's file naming the node and cluster a data directory
// belongs to, in java.util.Properties format:
//
//	#Written by runnel
//	version=1
//	node.id=1
//	cluster.id=Qm9vdHN0cmFwcGVkSWQ
const metaPropertiesName = "meta.properties"

type metaProperties struct {
	nodeID    metadata.NodeID
	hasNodeID bool
	clusterID string
}

// readMetaProperties reads DataDir/meta.properties; a missing file is no error.
func readMetaProperties(dir string) (metaProperties, error) {
	name := filepath.Join(dir, metaPropertiesName)
	b, err := vfs.ReadFile(vfs.OS(), name)
	if errors.Is(err, fs.ErrNotExist) {
		return metaProperties{}, nil
	}
	if err != nil {
		return metaProperties{}, fmt.Errorf("controller: read %s: %w", name, err)
	}
	p, err := parseMetaProperties(b)
	if err != nil {
		return p, fmt.Errorf("controller: %s: %w", name, err)
	}
	return p, nil
}

func parseMetaProperties(b []byte) (metaProperties, error) {
	var p metaProperties
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return p, fmt.Errorf("malformed line %q", line)
		}
		switch strings.TrimSpace(k) {
		case "node.id", "broker.id":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return p, fmt.Errorf("node.id %q: %w", v, err)
			}
			p.nodeID, p.hasNodeID = metadata.NodeID(n), true
		case "cluster.id":
			p.clusterID = strings.TrimSpace(v)
		case "version":
			if v = strings.TrimSpace(v); v != "0" && v != "1" {
				return p, fmt.Errorf("unsupported version %q", v)
			}
		}
	}
	return p, sc.Err()
}

// writeMetaProperties replaces DataDir/meta.properties atomically.
func writeMetaProperties(dir string, p metaProperties) error {
	var b strings.Builder
	b.WriteString("#Written by runnel\nversion=1\n")
	fmt.Fprintf(&b, "node.id=%d\n", p.nodeID)
	if p.clusterID != "" {
		fmt.Fprintf(&b, "cluster.id=%s\n", p.clusterID)
	}
	name := filepath.Join(dir, metaPropertiesName)
	if err := vfs.WriteFileAtomic(vfs.OS(), name, []byte(b.String())); err != nil {
		return fmt.Errorf("controller: write %s: %w", name, err)
	}
	return nil
}
