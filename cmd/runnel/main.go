// Command runnel is the single Runnel binary: the server and every client command.
// It holds no logic; internal/cli builds the command tree and maps errors to exit codes.
package main

import (
	"os"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/runnel-io/runnel/internal/server"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], server.NewCommand(), server.NewDevClusterCommand()))
}
