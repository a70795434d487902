package git

// WriteMirror stores the objects the mirror's writer has not stored yet,
// and runs the collection of garbage due, for tests that read the
// mirror's directory while the sink is open.
func (s *Sink) WriteMirror() error {
	s.m.turn <- struct{}{}
	defer func() { <-s.m.turn }()
	if err := s.m.objs.writeAll(); err != nil {
		return err
	}
	return s.m.collectNow()
}
