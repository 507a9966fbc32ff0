package config

// "Did you mean": an unknown name is answered with the closest known one, so that
// `--set num.partition=3` or `-c retention.m=1` says what was meant. Names are
// compared by edit distance (Levenshtein, over bytes: property names are ASCII), and a
// name is suggested only when it is close: at most two edits, and fewer than a third
// of the name's length, so that a wholly different name (`foo`) gets no suggestion
// rather than a random one.

import "strings"

// suggestBroker is the broker property an unknown name most likely meant: the broker
// synonym of a topic config given where a broker property belongs (retention.ms in
// server.properties is log.retention.ms), else the closest name of the table.
func suggestBroker(key string) string {
	if syn := synonyms[key]; len(syn) > 0 {
		return syn[0].name
	}
	return closestName(key, func(yield func(string) bool) {
		for i := range brokerProps {
			if !yield(brokerProps[i].name) {
				return
			}
		}
	})
}

// suggestTopic is the topic config an unknown name most likely meant: the topic config
// a broker property stands for (log.retention.ms given to a topic is retention.ms),
// else the closest topic config name.
func suggestTopic(key string) string {
	if p, ok := brokerByName[key]; ok && p.topic != "" {
		return p.topic
	}
	return closestName(key, func(yield func(string) bool) {
		for i := range topicProps {
			if !yield(topicProps[i].name) {
				return
			}
		}
	})
}

// closestName is the candidate nearest key, "" when none is close enough (ties: the
// first in the candidates' order).
func closestName(key string, candidates func(func(string) bool)) string {
	key = strings.ToLower(strings.TrimSpace(key))
	best, bestDist := "", 3 // at most two edits
	candidates(func(c string) bool {
		if d := editDistance(key, c); d < bestDist && 3*d < len(key) {
			best, bestDist = c, d
		}
		return true
	})
	return best
}

// editDistance is the Levenshtein distance of a and b (insertions, deletions and
// substitutions of one byte each cost 1), in O(len(a)·len(b)) time, one row of memory.
func editDistance(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0] // row[i-1][j-1]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			next := min(row[j]+1, row[j-1]+1, diag+cost)
			diag, row[j] = row[j], next
		}
	}
	return row[len(b)]
}
