package cli

import "github.com/spf13/cobra"

// outputFlags are the describing commands' --output text|json and its shorthand --json.
type outputFlags struct {
	format string
	asJSON bool
}

func (o *outputFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.format, "output", "o", "text", "output format: text or json (stable field names, see the README)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON (same as --output json)")
}

// json reports whether JSON was asked for; a format other than text or json is bad
// usage.
func (o *outputFlags) json() (bool, error) {
	switch o.format {
	case "json":
		return true, nil
	case "text", "":
		return o.asJSON, nil
	}
	return false, usageErrorf("bad --output %q: want text or json", o.format)
}
