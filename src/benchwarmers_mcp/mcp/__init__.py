"""MCP: the tool contract (``tools``), the HTTP server on the gateway's own port (``server``) and
the stdio forwarder (``stdio``)."""
