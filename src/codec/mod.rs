//! Bounded ingress and guarded egress: every byte a peer sends passes through here first.
