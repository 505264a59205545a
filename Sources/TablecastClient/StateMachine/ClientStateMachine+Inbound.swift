import TableModel
import TablecastProtocol

/// Inbound messages: answers to requests, updates applied to replicas (and predictions), snapshots, presence.
extension ClientStateMachine {
    /// Handles a message from `socket`; messages from a socket that is no longer the current one are ignored.
    mutating func receive(_ message: ServerMessage, on socket: SocketID, now: Instant) -> [Action] {
        guard accepts(socket) else { return [] }
        switch message {
        case .welcome(let welcome):
            return welcomed(welcome, now: now)
        case .update(let update):
            return apply(update)
        case .snapshot(let table, let version, let epoch, let rules, let sections):
            guard let subscription = subscriptions[table] else { return [] }
            let replica = Replica(
                name: table, epoch: epoch, table: Table(sections: sections, version: version, rules: rules))
            var renewed = Subscription(replica: replica, presence: subscription.presence)
            renewed.inFlightRef = subscription.inFlightRef
            if var optimistic = subscription.optimistic {
                optimistic.replaceConfirmed(with: TableEngine(table: replica.table))
                renewed.optimistic = optimistic
            }
            subscriptions[table] = renewed
            return [.emit(.snapshot(replica))]
        case .subscribed(let ref, let status):
            // Without a replica the catch-up had nothing to send: the table is still at the resumed version.
            if subscriptions[status.table]?.replica != nil {
                subscriptions[status.table]!.replica!.epoch = status.epoch
                subscriptions[status.table]!.replica!.table.rules = status.rules
            }
            return (answer(ref, message, now: now) ?? []) + [.emit(.subscribed(status))] + replacePresence(status)
        case .refreshed(let ref, let status):
            return (answer(ref, message, now: now) ?? []) + replacePresence(status)
        case .rules(let table, let rules):
            subscriptions[table]?.replica?.table.rules = rules
            subscriptions[table]?.optimistic?.setRules(rules)
            return [.emit(.rules(table: table, rules: rules))]
        case .dropped(let table):
            return endSubscription(table, failing: ProtocolError(.noSuchTable, "\(table) was dropped")) + [
                .emit(.dropped(table: table))
            ]
        case .presence(let delta):
            guard subscriptions[delta.table]?.presence != nil else { return [] }
            delta.apply(to: &subscriptions[delta.table]!.presence!)
            return [.emit(.presence(table: delta.table, presence: subscriptions[delta.table]!.presence!))]
        case .error(let error):
            if let refused = tokenRefreshAnswered(error.ref, accepted: false, now: now) {
                return refused + [.emit(.refusal(error))]
            }
            return answerOptimistic(error.ref, message, now: now) ?? answer(error.ref, message, now: now)
                ?? [.emit(.refusal(error))]
        case .ack:
            return answerOptimistic(message.ref, message, now: now) ?? answer(message.ref, message, now: now) ?? []
        case .tokenRefreshed(let ref, _):
            return tokenRefreshAnswered(ref, accepted: true, now: now) ?? answer(ref, message, now: now) ?? []
        case .unsubscribed(ref: nil, let table, let reason):
            // The server ended it: the connection's token no longer lets it read the table.
            let reason = reason ?? "the server ended the subscription"
            guard subscriptions[table] != nil else { return [] }
            return endSubscription(table, failing: ProtocolError(.forbidden, reason)) + [
                .emit(.subscriptionEnded(table: table, reason: reason))
            ]
        case .unsubscribed, .tables, .changes, .historicalSnapshot:
            return answer(message.ref, message, now: now) ?? []
        }
    }

    /// A message from `socket` that could not be decoded is reported as a refusal.
    func undecodable(_ error: any Error, on socket: SocketID) -> [Action] {
        guard accepts(socket) else { return [] }
        return [.emit(.refusal(ProtocolError(.internal, "undecodable server message: \(error)")))]
    }

    /// An update seen by a client that keeps no replicas (only its top level was scanned).
    func updateSeen(_ update: UpdateScanner.Summary, on socket: SocketID) -> TablecastClient.Event? {
        guard accepts(socket) else { return nil }
        return .updateSeen(
            table: update.table, version: update.version, originClient: update.originClient, originRef: update.originRef
        )
    }

    /// Applies an update to its replica and prediction; one that does not follow asks for a fresh snapshot.
    private mutating func apply(_ update: ServerMessage.Update) -> [Action] {
        // One lookup, and the subscription changed where it is: its replica's arrays are uniquely referenced there,
        // so nothing is copied (reading its fields one by one cost six lookups and copies of the subscription).
        let welcomedAs = welcomedAs
        switch subscriptions[update.table]?.apply(update, welcomedAs: welcomedAs) {
        case nil, .ignored?:
            return []
        case .applied(let replica, let predicted)?:
            var actions: [Action] = [.emit(.update(update, replica))]
            if let predicted { actions.append(.emit(.predicted(table: update.table, predicted))) }
            return actions
        case .outOfStep?:
            guard let socket = openSocket else { return [] }
            return [.socket(.send(ClientMessage(.subscribe(table: update.table, since: nil, epoch: nil)), on: socket))]
        }
    }

    /// Takes a subscribed table's presence state from a catch-up's `subscribed` or `refreshed`.
    private mutating func replacePresence(_ status: ServerMessage.TableStatus) -> [Action] {
        guard configuration.observesPresence, let presence = status.presence, subscriptions[status.table] != nil else {
            return []
        }
        subscriptions[status.table]!.presence = presence
        return [.emit(.presence(table: status.table, presence: presence))]
    }
}
