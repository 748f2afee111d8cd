"""Inbound wire formats. Each dialect module parses a request into an ``Ask``, renders a panel
or route answer (whole and streamed) in its own shape, and renders errors in its own shape."""
