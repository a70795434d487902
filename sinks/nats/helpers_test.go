package nats_test

import (
	"errors"

	"kollect.dev/kollect/sinks"
)

func errorsIsPermanent(err error) bool { return errors.Is(err, sinks.ErrPermanent) }
