package engine

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// spawnChild asks a guardian to spawn props as its child; the answer is the
// child's PID.
type spawnChild struct{ props *actor.Props }

// guardian is the parent of one kind of actor (targets or inventories): it
// applies the supervision strategy chosen for that kind and reports a child
// that stopped without being asked to, so the engine never keeps a dead PID
// that status would call Ready.
type guardian struct {
	stopped func(pid *actor.PID)
}

func (g *guardian) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *spawnChild:
		ctx.Respond(ctx.Spawn(msg.props))
	case *actor.Terminated:
		// Off the guardian's goroutine: the engine may be waiting, under
		// its lock, for this guardian to spawn a child.
		go g.stopped(msg.Who)
	}
}

// Supervision strategies, chosen per kind:
//   - a target rebuilds its rows from the informer caches, so it is always
//     restarted, with a back-off growing with its recent failures (a target
//     that keeps failing does not spin);
//   - an inventory is restarted at most inventoryRestarts times a minute;
//     past that it stops, its inventory reports the failure, and the next
//     reconcile starts it afresh.
const inventoryRestarts = 10

func targetSupervision() actor.SupervisorStrategy {
	return actor.NewExponentialBackoffStrategy(time.Minute, time.Second)
}

func inventorySupervision() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(inventoryRestarts, time.Minute, actor.DefaultDecider)
}

func spawnGuardian(root *actor.RootContext, strategy actor.SupervisorStrategy, stopped func(*actor.PID)) *actor.PID {
	return root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &guardian{stopped: stopped} },
		actor.WithSupervisor(strategy)))
}

// spawnUnder spawns props as a child of guardian.
func (e *Engine) spawnUnder(guardian *actor.PID, props *actor.Props) (*actor.PID, error) {
	res, err := e.system.Root.RequestFuture(guardian, &spawnChild{props: props}, 10*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("spawn actor: %w", err)
	}
	return res.(*actor.PID), nil
}
