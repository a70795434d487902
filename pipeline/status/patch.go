package status

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patch sends obj's status, as a merge patch from base, only when it
// differs from base. A reconcile or an
// engine report that confirms what the object already says costs the API
// server nothing: a restart of a manager with a thousand tenants confirmed
// about 3,000 statuses with empty patches, each a request the API server
// decoded, admitted and compared while the inventories waited on it.
func Patch(ctx context.Context, c client.Client, obj, base client.Object) error {
	data, err := client.MergeFrom(base).Data(obj)
	if err != nil {
		return fmt.Errorf("compose the status patch of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	if string(data) == "{}" {
		return nil
	}
	return c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))
}
