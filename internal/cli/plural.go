package cli

import "fmt"

// plural is n and the noun in the number n takes: "1 partition", "2 partitions",
// "0 partitions". Every count the CLI prints in a sentence goes through it, so that
// none reads "1 partitions moving".
func plural[N ~int | ~int32 | ~int64](n N, one, many string) string {
	if n == 1 || n == -1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
