"""Access control: the policy read from Settings (``policy``), the guard in front of every route
(``guard``), the admin token and login cookie (``admin_token``), gateway keys (``gateway_keys``)
and the secret-free access log (``access_log``)."""
