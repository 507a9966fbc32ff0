package log

import "os"

const osCreateTrunc = os.O_CREATE | os.O_TRUNC | os.O_WRONLY
