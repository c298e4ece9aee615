from adaptsim.cli import main

main()
