import Synchronization
import TablecastClient

/// How many of a load run's connections are live now, for the series: the client library's clients move it with
/// their state events (`tracker()`), raw connections with `opened()` and `closed()`. A client counts from the
/// server's welcome until its connection is lost or closed, so reconnects and churn show as they happen.
final class ConnectionGauge: Sendable {
    private let live = Atomic<Int>(0)

    var count: Int { live.load(ordering: .relaxed) }

    private final class Flag: Sendable {
        let isLive = Atomic<Bool>(false)
    }

    /// An event handler for one client (its `onEvent`, or called from it).
    func tracker() -> @Sendable (TablecastClient.Event) -> Void {
        let flag = Flag()
        return { [self] event in
            guard case .state(let state) = event else { return }
            let isLive = state == .live
            if flag.isLive.exchange(isLive, ordering: .relaxed) != isLive {
                live.add(isLive ? 1 : -1, ordering: .relaxed)
            }
        }
    }

    /// A connection without the client library was welcomed.
    func opened() { live.add(1, ordering: .relaxed) }

    /// A connection `opened()` counted closed.
    func closed() { live.subtract(1, ordering: .relaxed) }
}
