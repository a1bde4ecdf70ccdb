def cli_main(argv):
    raise NotImplementedError
