package git

// CollectDue does what the mirror's collector does once the exports
// pause, for tests that read the mirror's directory while the sink is
// open.
func (s *Sink) CollectDue() error {
	s.m.turn <- struct{}{}
	defer func() { <-s.m.turn }()
	return s.m.tidy()
}
