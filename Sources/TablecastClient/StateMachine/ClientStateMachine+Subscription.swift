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

extension ClientStateMachine.Subscription {
    /// What an update did to a subscription.
    enum UpdateOutcome {
        /// Not applied: a snapshot is awaited, there is no replica, or the replica has the version already.
        case ignored
        /// Applied: the replica after it, and the prediction when the client has one.
        case applied(Replica, predicted: Table?)
        /// It does not follow the replica or fit it: the subscription now awaits a fresh snapshot.
        case outOfStep
    }

    /// Applies an update to the replica and the prediction, in place. `welcomedAs` is this client's id: its own
    /// in-flight intent's update confirms the prediction's first pending intent.
    mutating func apply(_ update: ServerMessage.Update, welcomedAs: String?) -> UpdateOutcome {
        guard !resyncing, let version = replica?.version,
            update.version > version // not applied already (never expected)
        else { return .ignored }
        do {
            try replica!.apply(update)
            if optimistic != nil {
                let own =
                    update.originClient == welcomedAs && update.originRef != nil && update.originRef == inFlightRef
                try optimistic!.receive(update.batch, own: own)
            }
        } catch {
            resyncing = true
            return .outOfStep
        }
        return .applied(replica!, predicted: optimistic?.predicted)
    }
}
