//! Every named bound of the wire, each with the threat it blocks.
