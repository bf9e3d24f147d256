//! Pure state machines: owned state + event → new state + effects. No clock, no I/O.
