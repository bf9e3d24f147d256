//! JSON-RPC 2.0 envelope, exact request ids and the MCP error codes.
