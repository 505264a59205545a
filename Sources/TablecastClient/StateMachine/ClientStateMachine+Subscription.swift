import TableModel
import TablecastProtocol

extension ClientStateMachine {
    /// A table this client subscribed to.
    struct Subscription: Sendable {
        var replica: Replica?
        /// The predicted table and this client's pending intents, from its first optimistic intent on.
        var optimistic: OptimisticTable?
        /// The ref the in-flight optimistic intent was sent with.
        var inFlightRef: String?
        /// Set while a snapshot is awaited after the replica fell out of step; updates are ignored meanwhile.
        var resyncing = false
        /// Who is on the table: the state of the last catch-up with every delta since applied.
        var presence: PresenceState?
    }

    func replica(of table: String) -> Replica? { subscriptions[table]?.replica }

    func presence(of table: String) -> PresenceState? { subscriptions[table]?.presence }

    /// The table as this client shows it: the replica plus its pending optimistic intents; nil when not subscribed.
    func predicted(_ table: String) -> Table? {
        guard let subscription = subscriptions[table] else { return nil }
        return subscription.optimistic?.predicted ?? subscription.replica?.table
    }

    func pendingIntentCount(_ table: String) -> Int { subscriptions[table]?.optimistic?.pendingCount ?? 0 }

    func canUndo(_ table: String) -> Bool { subscriptions[table]?.optimistic?.canUndo ?? false }

    func canRedo(_ table: String) -> Bool { subscriptions[table]?.optimistic?.canRedo ?? false }
}
