import Logging
import TableStore
import TablecastProtocol

/// Keeps a node's tables in step with the other nodes on a shared PostgreSQL store: routes each notification
/// (commit, creation, drop, rules) to the table it names, and after the listening connection was lost and came
/// back, resyncs every table from the store, so nothing missed meanwhile is skipped.
final class ClusterFollower: Sendable {
    private let listener: PostgresListener

    init(url: String, directory: TableDirectory, health: StoreHealth, logger: Logger, tasks: ServerTasks) {
        // Every failed attempt to listen again reports the loss: once per cause per interval is enough.
        let failures = FailureLog(logger: logger, tasks: tasks)
        listener = PostgresListener(
            url: url,
            handlers: .init(
                onNotification: { notification in
                    switch notification {
                    case .committed(let table, let version):
                        if let actor = directory.actor(table) {
                            actor.followCommits(upTo: UInt64(version))
                        } else {
                            directory.adoptInBackground(table)
                        }
                    case .created(let table):
                        directory.adoptInBackground(table)
                    case .dropped(let table):
                        directory.forget(table)
                    case .rulesChanged(let table):
                        directory.actor(table)?.enqueue(.followStore(.rules))
                    case .presenceChanged(let table):
                        directory.actor(table)?.presenceChangedElsewhere()
                    }
                },
                onListening: { first in
                    health.listening(true)
                    if !first { logger.notice("listening for other nodes' commits again; catching up") }
                    // Also on the first start: commits between loading the tables and listening would be missed.
                    tasks.spawn { await Self.resync(directory) }
                },
                onLost: { error in
                    health.listening(false)
                    failures.log(
                        .warning, "lost the connection that follows other nodes; reconnecting",
                        cause: ProtocolError.reason(error), metadata: ["error": "\(error)"])
                }))
    }

    /// Resyncs until the store answers (it may still be backing off when the listener is back), or the server
    /// stops.
    private static func resync(_ directory: TableDirectory) async {
        var delay = Duration.milliseconds(100)
        while true {
            do {
                return try await directory.resync()
            } catch is Committer.Stopped {
                return
            } catch {
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(2))
            }
        }
    }

    /// Stops listening; returns once the listener's thread has ended.
    func stop() {
        listener.stop()
    }
}
