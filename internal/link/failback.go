package link

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// failbackOp runs failback and switchover (not built yet: issue 32).
func (a *Admin) failbackOp(ctx context.Context, req Request) Response {
	return errorResponse(fmt.Errorf("%w: link %s is not built yet", kerr.InvalidRequest, req.Op))
}
