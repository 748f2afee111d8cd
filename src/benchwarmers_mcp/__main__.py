from benchwarmers_mcp.cli.main import main

raise SystemExit(main())
