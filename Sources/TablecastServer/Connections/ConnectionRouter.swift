import DequeModule
import Foundation
import TablecastProtocol
import WebSocketTransport

/// Takes every transport event, in order, on one task: keeps the sessions, decodes messages, enforces access,
/// pacing and the bad-message limit, answers connection-level requests and hands table work to the table actors.
///
/// It never waits for I/O. The few requests that touch the store directly (a first hello's refs, createTable,
/// dropTable) run as tasks of their own, and until one finishes the rest of its connection's messages wait in
/// order, unread by the transport's count, while every other connection is served.
final class ConnectionRouter {
    struct Settings: Sendable {
        var policy: AccessPolicy
        /// Which pages a browser connection may come from.
        var origins: OriginPolicy
        var limits: ProtocolLimits
        var intentsPerSecond: Int
        var maxConsecutiveBadMessages: Int
        var maxMessageBytes: Int
        var serverVersion: String
    }

    /// Messages (and their bytes) of one connection that may wait for this router: past either, the transport
    /// stops reading the connection until the router catches up, so a peer that sends faster than the server
    /// decodes fills its own TCP buffers rather than the server's memory.
    static let maxUnconsumedMessages = 256
    static let maxUnconsumedBytes = 4 << 20

    /// The close code of a connection whose token expired, was revoked, or is no longer valid.
    static let tokenEndedCode = WebSocketCloseCode(rawValue: 4001)
    /// How often tokens' expiries are checked: a connection is closed at most this long after its token ends.
    static let expiryCheckInterval = Duration.milliseconds(250)

    let context: ServerContext
    let directory: TableDirectory
    /// Its policy is replaced when the access files are reloaded.
    var settings: Settings
    var sessions: [WebSocketConnectionID: ConnectionSession] = [:]
    var connectionsPerClient: [RefOwner: Int] = [:]
    /// Messages of connections whose previous request is still running as a task, in arrival order.
    private var held: [WebSocketConnectionID: Deque<WebSocketInboundMessage>] = [:]
    /// Where request tasks report back.
    private let events: RouterEvents
    private let anonymousPrefix = "anon-" + String(UInt32.random(in: 0...UInt32.max), radix: 16) + "-"
    /// Once set, new requests are refused: the server is shutting down.
    private var stopping = false

    init(
        context: ServerContext, directory: TableDirectory, settings: Settings,
        events: RouterEvents
    ) {
        self.context = context
        self.directory = directory
        self.settings = settings
        self.events = events
    }

    /// Handles events until ``RouterEvents/finish()`` was called and every event queued before it is handled.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            // Tokens expire only where there are tokens: only then is the time worth watching.
            if settings.policy.requiresToken {
                let ticks = self.events
                group.addTask {
                    while (try? await Task.sleep(for: Self.expiryCheckInterval)) != nil {
                        if !ticks.yield(.tick) { return }
                    }
                }
            }
            await handle()
            group.cancelAll()
        }
    }

    private func handle() async {
        while let batch = await events.next() {
            for event in batch { handle(event) }
        }
    }

    private func handle(_ event: RouterEvent) {
        switch event {
        case .transport(.opened(let info)): opened(info)
        case .transport(.message(let id, let message)):
            if held[id] != nil {
                held[id]!.append(message)
            } else {
                received(message, on: id)
            }
        case .transport(.closed(let id, _)): closed(id)
        case .finished(let id, let outcome): finished(outcome, on: id)
        case .stop(let done):
            stopping = true
            done.resume()
        case .tick: closeExpired(now: Self.wallClock())
        case .policy(let policy, let done): done.resume(returning: replace(policy))
        }
    }

    private func opened(_ info: WebSocketConnectionInfo) {
        if !settings.origins.allows(origin: info.origin, host: info.host), let origin = info.origin {
            context.logger.notice(
                "refused a connection from a foreign origin",
                metadata: [
                    "origin": "\(origin)", "remote": "\(info.remoteAddress)",
                    "connection": .stringConvertible(info.id.rawValue),
                ])
            context.transport.close(
                info.id, code: WebSocketCloseCode(rawValue: 1008), reason: "origin \(origin) is not allowed")
            return
        }
        context.setOpen(info.id, true)
        let client = anonymousPrefix + String(info.id.rawValue)
        sessions[info.id] = ConnectionSession(
            id: info.id, anonymousClient: client, intentsPerSecond: settings.intentsPerSecond)
        connectionsPerClient[RefOwner(principal: "", client: client), default: 0] += 1
    }

    private func closed(_ id: WebSocketConnectionID) {
        held[id] = nil
        context.setOpen(id, false)
        guard let session = sessions.removeValue(forKey: id) else { return }
        for table in session.subscriptions { directory.actor(table)?.enqueue(.disconnected(id)) }
        context.history.forget(id)
        let owner = session.requester.refOwner
        let remaining = (connectionsPerClient[owner] ?? 1) - 1
        if remaining > 0 {
            connectionsPerClient[owner] = remaining
        } else {
            connectionsPerClient[owner] = nil
            context.refs.forget(owner)
        }
    }

    /// Runs `work` as a task of its own; the connection's next messages wait until it reports back.
    func detach(_ id: WebSocketConnectionID, _ work: @escaping @Sendable () async -> RequestOutcome) {
        held[id] = []
        let events = events
        context.tasks.spawn {
            events.yield(.finished(id, await work()))
        }
    }

    /// A request task is done: completes it, then handles the connection's messages that waited for it, in order,
    /// until one of them is detached in turn.
    private func finished(_ outcome: RequestOutcome, on id: WebSocketConnectionID) {
        guard var waiting = held.removeValue(forKey: id) else { return }
        if case .hello(var hello, let refs) = outcome, sessions[id] != nil {
            // The access files may have been reloaded while the refs were read: the token must still be accepted.
            do throws(AccessPolicy.Denial) {
                let credential = try settings.policy.authenticate(token: hello.token, now: Self.wallClock())
                // The refs read are the principal's the token had then.
                guard credential.principal == hello.credential?.principal else {
                    throw AccessPolicy.Denial(code: .unauthorized, message: "the token's user changed: say hello again")
                }
                hello.credential = credential
                completeHello(&sessions[id]!, hello, refs: refs)
            } catch {
                sessions[id]!.refusedToken = error.message
                refuse(id, ProtocolError(error), ref: hello.ref)
            }
        }
        if case .adopted(let message, let found) = outcome, sessions[id] != nil, let table = message.table {
            switch found {
            case .success(let actor?):
                dispatch(message, table: table, to: actor, session: &sessions[id]!)
            case .success(nil):
                refuse(id, ProtocolError(.noSuchTable, "no table '\(table)'"), ref: message.ref)
            case .failure(let error):
                // The store could not be asked: the table may well exist.
                let refusal = context.unavailable(
                    "table '\(table)' is not held by this node, and the database cannot be read", error, table: table)
                refuse(id, refusal, ref: message.ref)
            }
        }
        while held[id] == nil, sessions[id] != nil, let next = waiting.popFirst() {
            received(next, on: id)
        }
        if held[id] != nil { held[id]!.prepend(contentsOf: waiting) }
    }

    func reply(_ id: WebSocketConnectionID, _ message: ServerMessage) {
        context.send(message, to: id)
    }

    func refuse(_ id: WebSocketConnectionID, _ error: ProtocolError, ref: String?) {
        context.refuse(id, error, ref: ref)
    }

    private func received(_ inbound: WebSocketInboundMessage, on id: WebSocketConnectionID) {
        defer { context.transport.consumed(id) }
        guard var session = sessions[id] else { return }
        defer { if sessions[id] != nil { sessions[id] = session } }
        guard inbound.kind == .text else {
            // Not a malformed message but another protocol: the spec closes the connection.
            context.transport.close(
                id, code: WebSocketCloseCode(rawValue: 1008), reason: "binary frames are not part of the protocol")
            return
        }
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(inbound.bytes, limits: settings.limits)
        } catch {
            reply(id, .error(error))
            session.consecutiveBadMessages += 1
            if session.consecutiveBadMessages >= settings.maxConsecutiveBadMessages {
                context.logger.notice(
                    "closing a connection after too many bad messages",
                    metadata: ["client": "\(session.client)", "connection": .stringConvertible(id.rawValue)])
                context.transport.close(
                    id, code: WebSocketCloseCode(rawValue: 1008),
                    reason: "\(settings.maxConsecutiveBadMessages) bad messages in a row")
            }
            return
        }
        session.consecutiveBadMessages = 0
        if stopping {
            return refuse(id, ProtocolError(.unavailable, "the server is shutting down"), ref: message.ref)
        }
        if case .hello(let client, let name, let token) = message.body {
            return hello(&session, Hello(client: client, name: name, token: token, ref: message.ref))
        }
        if case .refreshToken(let token) = message.body {
            return refreshToken(&session, token, ref: message.ref)
        }
        if case .listTables = message.body {
            guard authorizedAtAll(session, ref: message.ref) else { return }
            let credential = session.credential
            let visible = directory.summaries { settings.policy.role(credential, on: $0) != nil }
            guard let cluster = context.clusterPresence else { return reply(id, .tables(ref: message.ref, visible)) }
            // Subscribers on the other nodes, from the presence they share through the store.
            let (context, ref) = (context, message.ref)
            return detach(id) {
                let elsewhere = await cluster.subscribersElsewhere()
                let everywhere = visible.map { summary in
                    var summary = summary
                    summary.subscribers += elsewhere[summary.table] ?? 0
                    return summary
                }
                context.send(.tables(ref: ref, everywhere), to: id)
                return .done
            }
        }
        guard let table = message.table else { return }
        do {
            try settings.policy.authorize(
                session.credential, table: table, needs: message.neededRole, now: Self.wallClock())
        } catch {
            return refuse(id, refusal(error, session), ref: message.ref)
        }
        let requester = session.requester
        switch message.body {
        case .history, .snapshotAt:
            // Reading the past costs the store a read and a replay: paced like catch-ups.
            guard session.bucket.take(now: Self.seconds()) else {
                return refuse(id, pacedOut, ref: message.ref)
            }
        default:
            break
        }
        switch message.body {
        case .createTable(let name, let sections, let rules):
            let (directory, context, ref) = (directory, context, message.ref)
            return detach(id) {
                context.send(await directory.create(name, sections: sections, rules: rules, ref: ref), to: id)
                return .done
            }
        case .dropTable(let name):
            let (directory, ref) = (directory, message.ref)
            return detach(id) {
                await directory.drop(name, requester: requester, ref: ref)
                return .done
            }
        case .history, .snapshotAt:
            // Read beside the table's work, not through its actor or the committer.
            if directory.actor(table) != nil { return readHistory(message, table: table, on: id) }
        default:
            break
        }
        guard let actor = directory.actor(table) else {
            guard context.isShared else {
                return refuse(id, ProtocolError(.noSuchTable, "no table '\(table)'"), ref: message.ref)
            }
            // With a shared store, another node may have created the table a moment ago.
            let directory = directory
            return detach(id) {
                do {
                    return .adopted(message, .success(try await directory.adopt(table)))
                } catch {
                    return .adopted(message, .failure(error))
                }
            }
        }
        dispatch(message, table: table, to: actor, session: &session)
    }

    /// Answers `history` or `snapshotAt` on table `table` from the history reader; `history` from the changes
    /// held in memory when the store cannot be read (see ``RecentChanges``).
    private func readHistory(_ message: ClientMessage, table: String, on id: WebSocketConnectionID) {
        let (history, transport, context, ref) = (context.history, context.transport, context, message.ref)
        let principal = sessions[id]?.credential?.principal ?? ""
        switch message.body {
        case .history(_, let from, let to, let limit, let newestFirst):
            let (epoch, count) = (directory.actor(table)?.epoch, limit ?? settings.limits.defaultHistoryEntries)
            let held = { @Sendable in
                epoch.flatMap {
                    context.recentChanges.changes(
                        table, epoch: $0, from: from, to: to, limit: count, newestFirst: newestFirst, ref: ref)
                }
            }
            detach(id) {
                // While the store is known down, memory first: the store would keep the request waiting in vain.
                if !context.health.isUp, let held = held() {
                    context.send(.changes(held), to: id)
                    return .done
                }
                let answer = await history.changes(
                    table, from: from, to: to, limit: limit, newestFirst: newestFirst, ref: ref, for: id,
                    principal: principal, orFromMemory: held)
                transport.send(answer, to: id)
                return .done
            }
        case .snapshotAt(_, let version):
            detach(id) {
                transport.send(
                    await history.snapshot(table, at: version, ref: ref, for: id, principal: principal), to: id)
                return .done
            }
        default:
            break
        }
    }

    /// Hands a table's request to its actor.
    private func dispatch(
        _ message: ClientMessage, table: String, to actor: TableActor, session: inout ConnectionSession
    ) {
        let (id, requester) = (session.id, session.requester)
        switch message.body {
        case .subscribe, .refresh, .intent:
            // A catch-up can cost a table more than an edit: they share the connection's pace.
            guard session.bucket.take(now: Self.seconds()) else {
                if case .intent = message.body { context.metrics.intent(.rejected, table: table) }
                return refuse(id, pacedOut, ref: message.ref)
            }
        default:
            break
        }
        switch message.body {
        case .subscribe(_, let since, let epoch):
            session.subscriptions.insert(table)
            actor.enqueue(.subscribe(requester, ref: message.ref, since: since, epoch: epoch))
        case .refresh(_, let since, let epoch):
            actor.enqueue(.refresh(requester, ref: message.ref, since: since, epoch: epoch))
        case .unsubscribe:
            session.subscriptions.remove(table)
            actor.enqueue(.unsubscribe(requester, ref: message.ref))
        case .setRules(_, let rules):
            actor.enqueue(.setRules(requester, ref: message.ref, rules))
        case .intent(_, let base, let intent):
            guard actor.enqueueIntent(requester, ref: message.ref, base: base, intent) else {
                context.metrics.intent(.rejected, table: table)
                return refuse(
                    id,
                    ProtocolError(
                        .rateLimited,
                        "table '\(table)' has \(context.maxQueuedIntents) intents waiting; send again once some are answered"
                    ),
                    ref: message.ref)
            }
        case .editing(_, let on):
            actor.enqueue(.presence(requester, ref: message.ref, .editing(on)))
        case .beginEditingRow(_, let row):
            actor.enqueue(.presence(requester, ref: message.ref, .beginEditingRow(row)))
        case .endEditingRow(_, let row):
            actor.enqueue(.presence(requester, ref: message.ref, .endEditingRow(row)))
        case .history, .snapshotAt:
            readHistory(message, table: table, on: id)
        case .hello, .refreshToken, .listTables, .createTable, .dropTable:
            break
        }
    }

    /// The refusal of a request beyond the connection's pace.
    private var pacedOut: ProtocolError {
        ProtocolError(
            .rateLimited,
            "more than \(settings.intentsPerSecond) intents, subscribes and refreshes per second (history reads count too)"
        )
    }

    /// Monotonic seconds, for the token buckets.
    private static func seconds() -> Double {
        ProcessInfo.processInfo.systemUptime
    }
}
