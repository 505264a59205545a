import Dispatch
import Foundation
import Logging
import Synchronization
import TableStore

/// The one owner of the store (``TableStorage``: SQLite or PostgreSQL): a dedicated thread (its calls block, so they stay off the cooperative
/// pool) that performs group commit.
///
/// Groups submitted while a transaction is in flight wait in the queue; the next turn of the loop writes all of
/// them, across tables, in one transaction, and tells each group's submitter once that transaction is durable.
/// One fsync therefore acknowledges as many intents as arrived during the previous one.
final class Committer: Sendable {
    /// What a commit turn measured, for metrics.
    struct TurnReport: Sendable {
        var records: Int
        var groups: Int
        var duration: Duration
    }

    /// Told a group's outcome on the committer thread.
    typealias Completion = @Sendable (Result<Void, any Error>) -> Void

    private enum Job: Sendable {
        case commit([CommitRecord], Completion)
        case perform(run: @Sendable (any TableStorage) -> Void, fail: @Sendable (any Error) -> Void)
    }

    /// A job submitted after ``stop()``.
    struct Stopped: Error, CustomStringConvertible {
        var description: String { "the server is shutting down" }
    }

    private struct State {
        var jobs: [Job] = []
        var stopping = false
    }

    /// The store, confined to the committer thread once the thread starts.
    private final class StoreBox: @unchecked Sendable {
        let store: any TableStorage
        init(_ store: any TableStorage) { self.store = store }
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let onTurn: @Sendable (TurnReport) -> Void
    private let health: StoreHealth?
    private let logger: Logger
    /// Test only (`serve --debug-commit-delay-ms`): how long each commit turn waits before committing.
    private let debugDelay: Duration

    /// Starts the thread. `store` must not be used by anyone else from now on. `health` hears every outcome.
    init(
        store: any TableStorage, logger: Logger, health: StoreHealth? = nil, debugDelay: Duration = .zero,
        onTurn: @escaping @Sendable (TurnReport) -> Void = { _ in }
    ) {
        self.onTurn = onTurn
        self.debugDelay = debugDelay
        self.logger = logger
        self.health = health
        let box = StoreBox(store)
        let thread = Thread { [self] in run(box.store) }
        thread.name = "tablecast-committer"
        thread.start()
    }

    /// Writes `records` (one table's group, in version order) in the next transaction and calls `completion` on
    /// the committer thread once the group is durable or has failed; the caller goes on meanwhile (table actors
    /// resolve their next group while this one is being written).
    func submit(_ records: [CommitRecord], completion: @escaping Completion) {
        submit(.commit(records, completion))
    }

    /// Runs `body` with the store on the committer thread, after the commits queued before it.
    func perform<T: Sendable>(_ body: @escaping @Sendable (any TableStorage) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit(
                .perform(
                    run: { [health] store in
                        let result = Result { try body(store) }
                        if case .failure(let error) = result { health?.record(error) } else { health?.record(nil) }
                        continuation.resume(with: result)
                    },
                    fail: { continuation.resume(throwing: $0) }))
        }
    }

    /// Ends the store's reservation of table `name` (see ``TableStorage/commit(_:)``) after the commits queued
    /// before.
    func release(_ name: String) {
        submit(.perform(run: { $0.release(name) }, fail: { _ in }))
    }

    /// Finishes what is queued, closes the store (checkpointing the WAL) and stops the thread.
    func stop() async {
        state.withLock { $0.stopping = true }
        wakeup.signal()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.stopped.wait()
                continuation.resume()
            }
        }
    }

    private func submit(_ job: Job) {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        guard accepted else {
            switch job {
            case .commit(_, let completion): completion(.failure(Stopped()))
            case .perform(_, let fail): fail(Stopped())
            }
            return
        }
        wakeup.signal()
    }

    private func run(_ store: any TableStorage) {
        /// The checkpoint failure last logged, so that a lasting one is logged once, and its end too.
        var loggedCheckpointFailure: String?
        while true {
            // Reservations whose rebased group never came must not hold other nodes up, whether this committer
            // is idle or busy with other tables.
            store.releaseExpiredReservations()
            while wakeup.wait(timeout: .now() + 1) == .timedOut { store.releaseExpiredReservations() }
            let (jobs, stopping) = state.withLock { state in
                defer { state.jobs.removeAll(keepingCapacity: true) }
                return (state.jobs, state.stopping)
            }
            var groups: [([CommitRecord], Completion)] = []
            for job in jobs {
                switch job {
                case .commit(let records, let completion): groups.append((records, completion))
                case .perform(let body, _):
                    // Reads and table-level changes keep their place after the commits queued before them.
                    commitGroups(groups, store)
                    groups.removeAll()
                    body(store)
                }
            }
            commitGroups(groups, store)
            // Background checkpoints fail without failing a commit, but the WAL then grows without bound.
            let checkpointFailure = store.checkpointFailure.map { "\($0)" }
            if checkpointFailure != loggedCheckpointFailure {
                if let checkpointFailure {
                    logger.error(
                        "a WAL checkpoint failed: the WAL grows until one succeeds",
                        metadata: ["error": "\(checkpointFailure)"])
                } else {
                    logger.notice("WAL checkpoints succeed again")
                }
                loggedCheckpointFailure = checkpointFailure
            }
            if stopping && state.withLock({ $0.jobs.isEmpty }) {
                do {
                    try store.close()
                } catch {
                    logger.error(
                        "the database could not be closed cleanly; its WAL is left for the next start to replay",
                        metadata: ["error": "\(error)"])
                }
                stopped.signal()
                return
            }
        }
    }

    private func commitGroups(_ groups: [([CommitRecord], Completion)], _ store: any TableStorage) {
        guard !groups.isEmpty else { return }
        if debugDelay > .zero {
            // The committer has its own thread: blocking it delays commits and nothing else.
            Thread.sleep(forTimeInterval: debugDelay / .seconds(1))
        }
        let start = ContinuousClock.now
        do {
            // One group (one table's, the usual case) is passed as it is, not copied record by record.
            try store.commit(groups.count == 1 ? groups[0].0 : groups.flatMap(\.0))
            health?.record(nil)
            for (_, completion) in groups { completion(.success(())) }
        } catch let error as StoreError where !error.kind.isStorageFailure && groups.count > 1 {
            // One table's group is at fault (e.g. dropped meanwhile): commit the others without it.
            for (records, completion) in groups {
                completion(Result { try store.commit(records) })
            }
        } catch {
            health?.record(error)
            for (_, completion) in groups { completion(.failure(error)) }
        }
        onTurn(
            TurnReport(
                records: groups.reduce(0) { $0 + $1.0.count }, groups: groups.count, duration: start.duration(to: .now))
        )
    }
}
