import Synchronization
import TablecastClient

/// How many of a load run's connections are live now, for the series: the client library's clients move it with
/// their state events (`tracker()`), raw connections with `opened()` and `closed()`. A client counts from the
/// server's welcome until its connection is lost or closed, so reconnects and churn show as they happen.
final class ConnectionGauge: Sendable {
    private let live = Atomic<Int>(0)

    var count: Int { live.load(ordering: .relaxed) }

    /// An event handler for one client (its `onEvent`, or called from it).
    func tracker() -> @Sendable (TablecastClient.Event) -> Void {
        let wasLive = AtomicFlag()
        return { [self] event in
            guard case .state(let state) = event else { return }
            let isLive = state == .live
            if wasLive.exchange(isLive) != isLive {
                live.add(isLive ? 1 : -1, ordering: .relaxed)
            }
        }
    }

    /// A connection without the client library was welcomed.
    func opened() { live.add(1, ordering: .relaxed) }

    /// A connection `opened()` counted closed.
    func closed() { live.subtract(1, ordering: .relaxed) }
}

/// A flag set and read from any thread.
final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set(_ on: Bool) { value.store(on, ordering: .relaxed) }
    /// Sets the flag to `on` and returns what it was.
    func exchange(_ on: Bool) -> Bool { value.exchange(on, ordering: .relaxed) }
}
