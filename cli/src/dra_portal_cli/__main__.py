from dra_portal_cli.main import main

main()
