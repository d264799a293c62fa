from forktool.cli import main

main()
