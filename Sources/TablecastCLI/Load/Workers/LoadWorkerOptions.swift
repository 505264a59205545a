import ArgumentParser

/// `tablecast load`'s options for running the load from several generator processes.
struct LoadWorkerOptions: ParsableArguments {
    @Option(
        help:
            "Generator processes: this many run the load (each a share of subscribers, writers, rate, stages and churn; the report merges their counts and HDR histograms exactly). See --worker-of."
    )
    var workers = 1

    @Option(help: "Besides --workers, wait for this many workers started on other machines with --worker-of.")
    var remoteWorkers = 0

    @Option(
        help: ArgumentHelp(
            "Where the coordinator listens for workers (default 127.0.0.1:0, any free port; the port is printed).",
            valueName: "host:port"))
    var listen = "127.0.0.1:0"

    @Option(
        help: ArgumentHelp(
            "Run as a worker of the coordinator at HOST:PORT: it sends the options to run, and this process sends "
                + "back its counts and histograms. Line protocol over TCP: the worker says `tablecast-load-worker 1`, "
                + "the coordinator answers `run <JSON array of arguments>`; the worker says `ready {}` once set up and "
                + "`sent {}` once its writers stopped, each time going on when the coordinator says it back (all "
                + "workers said it); then it answers "
                + "`result <JSON: counts, errors, histograms, seconds, convergence>`.",
            valueName: "host:port"))
    var workerOf: String?

    @Option(help: .hidden) var rawSamples: String?

    /// The run's ref marker, given to workers by their coordinator.
    @Option(help: .hidden) var runMarker: String?
}
