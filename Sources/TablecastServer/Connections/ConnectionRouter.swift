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

    private let context: ServerContext
    private let directory: TableDirectory
    /// Its policy is replaced when the access files are reloaded.
    private var settings: Settings
    private var sessions: [WebSocketConnectionID: ConnectionSession] = [:]
    private var connectionsPerClient: [RefOwner: Int] = [:]
    /// Messages of connections whose previous request is still running as a task, in arrival order.
    private var held: [WebSocketConnectionID: Deque<WebSocketInboundMessage>] = [:]
    /// Where request tasks report back.
    private let events: AsyncStream<RouterEvent>.Continuation
    private let anonymousPrefix = "anon-" + String(UInt32.random(in: 0...UInt32.max), radix: 16) + "-"
    /// Once set, new requests are refused: the server is shutting down.
    private var stopping = false

    init(
        context: ServerContext, directory: TableDirectory, settings: Settings,
        events: AsyncStream<RouterEvent>.Continuation
    ) {
        self.context = context
        self.directory = directory
        self.settings = settings
        self.events = events
    }

    /// Handles events until the stream ends.
    func run(_ events: AsyncStream<RouterEvent>) async {
        await withTaskGroup(of: Void.self) { group in
            // Tokens expire only where there are tokens: only then is the time worth watching.
            if settings.policy.requiresToken {
                let ticks = self.events
                group.addTask {
                    while (try? await Task.sleep(for: Self.expiryCheckInterval)) != nil {
                        if case .terminated = ticks.yield(.tick) { return }
                    }
                }
            }
            await handle(events)
            group.cancelAll()
        }
    }

    private func handle(_ events: AsyncStream<RouterEvent>) async {
        for await event in events {
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
    private func detach(_ id: WebSocketConnectionID, _ work: @escaping @Sendable () async -> RequestOutcome) {
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

    private func reply(_ id: WebSocketConnectionID, _ message: ServerMessage) {
        context.send(message, to: id)
    }

    private func refuse(_ id: WebSocketConnectionID, _ error: ProtocolError, ref: String?) {
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

    /// With tokens, a request that names no table still needs a valid token.
    private func authorizedAtAll(_ session: ConnectionSession, ref: String?) -> Bool {
        do {
            try settings.policy.authenticate(session.credential, now: Self.wallClock())
            return true
        } catch {
            refuse(session.id, refusal(error, session), ref: ref)
            return false
        }
    }

    /// The wire form of an access refusal: for a connection whose hello's token was refused, that refusal's reason.
    private func refusal(_ denial: AccessPolicy.Denial, _ session: ConnectionSession) -> ProtocolError {
        guard denial.code == .unauthorized, session.credential == nil, let reason = session.refusedToken else {
            return ProtocolError(denial)
        }
        return ProtocolError(.unauthorized, reason)
    }

    /// The refusal of a request beyond the connection's pace.
    private var pacedOut: ProtocolError {
        ProtocolError(
            .rateLimited,
            "more than \(settings.intentsPerSecond) intents, subscribes and refreshes per second (history reads count too)"
        )
    }

    /// The credential `token` gives now, or the refusal to send; a refusal is logged as `refused`, with who and
    /// why, never the token itself.
    private func authenticate(
        _ token: String?, refused: String, client: String, on id: WebSocketConnectionID
    ) -> Result<Credential, ProtocolError> {
        do {
            return .success(try settings.policy.authenticate(token: token, now: Self.wallClock()))
        } catch {
            let refusal = ProtocolError(error)
            context.logger.notice(
                "\(refused)",
                metadata: [
                    "client": "\(client)", "connection": .stringConvertible(id.rawValue), "code": "\(refusal.code)",
                ])
            return .failure(refusal)
        }
    }

    private func hello(_ session: inout ConnectionSession, _ hello: Hello) {
        guard !session.saidHello else {
            return refuse(
                session.id, ProtocolError(.badRequest, "hello was already sent on this connection"), ref: hello.ref)
        }
        let credential: Credential
        switch authenticate(hello.token, refused: "refused a hello", client: hello.client, on: session.id) {
        case .success(let verified):
            credential = verified
        case .failure(let refusal):
            session.refusedToken = refusal.message
            return refuse(session.id, refusal, ref: hello.ref)
        }
        var checked = hello
        checked.credential = credential
        let hello = checked
        let owner = RefOwner(principal: credential.principal, client: hello.client)
        // Without the store, the client is welcome all the same, to read: its refs stay unloaded, so each of its
        // intents with a ref is checked against the store, and refused while the store cannot be read.
        guard !context.refs.isLoaded(owner), context.health.isUp else {
            return completeHello(&session, hello, refs: nil)
        }
        let committer = context.committer
        detach(session.id) {
            let stored = try? await committer.perform { try $0.refs(of: owner.client, principal: owner.principal) }
            return .hello(hello, stored?.mapValues { RefUse(table: $0.table, epoch: $0.epoch, intent: $0.intent) })
        }
    }

    /// Welcomes the client, with the refs it has in the store when they could be read (nil: not read).
    private func completeHello(_ session: inout ConnectionSession, _ hello: Hello, refs: [String: RefUse]?) {
        let owner = RefOwner(principal: hello.credential?.principal ?? "", client: hello.client)
        if let stored = refs, !stored.isEmpty || !context.refs.isLoaded(owner) {
            context.refs.load(owner, refs: stored)
        }
        let previous = session.requester.refOwner
        session.client = hello.client
        // A verified name is the one shown; the name given in hello only stands in when the token has none.
        session.name = hello.credential?.name ?? (hello.name?.isEmpty == false ? hello.name : nil)
        session.credential = hello.credential
        session.token = hello.token
        session.refusedToken = nil
        session.stable = true
        session.saidHello = true
        connectionsPerClient[previous] = nil
        connectionsPerClient[owner, default: 0] += 1
        reply(
            session.id,
            .welcome(
                .init(
                    ref: hello.ref, client: hello.client, serverName: "tablecast",
                    serverVersion: settings.serverVersion,
                    maxMessageBytes: settings.maxMessageBytes, maxBatchEntries: settings.limits.maxBatchEntries,
                    intentsPerSecond: settings.intentsPerSecond)))
    }

    /// Replaces the connection's token with `token`, which must be valid and the same user's (the same principal,
    /// so its refs stay its own); its grants apply at once.
    private func refreshToken(_ session: inout ConnectionSession, _ token: String, ref: String?) {
        guard settings.policy.requiresToken else {
            return refuse(session.id, ProtocolError(.badRequest, "this server takes no tokens"), ref: ref)
        }
        guard let current = session.credential, session.token != nil else {
            return refuse(
                session.id,
                ProtocolError(.badRequest, "refreshToken replaces the token of hello: say hello with a token first"),
                ref: ref)
        }
        let credential: Credential
        switch authenticate(token, refused: "refused a token refresh", client: session.client, on: session.id) {
        case .success(let verified):
            credential = verified
        case .failure(let refusal):
            return refuse(session.id, refusal, ref: ref)
        }
        guard credential.principal == current.principal else {
            return refuse(
                session.id,
                ProtocolError(.unauthorized, "token refused: it is not for the user this connection said hello as"),
                ref: ref)
        }
        session.token = token
        // The ack first: a subscription the new token ends is then always reported after it.
        reply(session.id, .tokenRefreshed(ref: ref, expires: credential.expiry))
        apply(credential, to: &session)
    }

    /// Gives `session` its new `credential`: subscriptions to tables it may no longer read end, saying why.
    private func apply(_ credential: Credential, to session: inout ConnectionSession) {
        session.credential = credential
        for table in session.subscriptions where settings.policy.role(credential, on: table) == nil {
            session.subscriptions.remove(table)
            directory.actor(table)?.enqueue(
                .unsubscribe(
                    session.requester, ref: nil,
                    reason: "the connection's token no longer lets it read table '\(table)'"))
        }
    }

    /// Closes the connections whose tokens ended by `now` with 4001.
    private func closeExpired(now: Double) {
        for (id, session) in sessions where !session.closing {
            guard let endsAt = session.credential?.endsAt, now >= endsAt else { continue }
            close(id, reason: "token expired")
        }
    }

    /// Closes connection `id` with 4001, because of its token: `reason` says why.
    private func close(_ id: WebSocketConnectionID, reason: String) {
        sessions[id]?.closing = true
        context.transport.close(id, code: Self.tokenEndedCode, reason: reason)
    }

    /// Makes `policy` the one in force (the access files were reloaded): every connection's token is checked again,
    /// and its new grants apply at once; one no longer valid (revoked, gone from the tokens file) or now another
    /// user's is closed with 4001. Returns how many were closed.
    private func replace(_ policy: AccessPolicy) -> Int {
        settings.policy = policy
        let now = Self.wallClock()
        var closed = 0
        for id in Array(sessions.keys) {
            guard var session = sessions[id], !session.closing, let token = session.token else { continue }
            let credential: Credential
            do {
                credential = try policy.authenticate(token: token, now: now)
            } catch {
                close(id, reason: error.message)
                closed += 1
                continue
            }
            guard credential.principal == session.credential?.principal else {
                close(id, reason: "the token's user changed")
                closed += 1
                continue
            }
            apply(credential, to: &session)
            sessions[id] = session
        }
        return closed
    }

    /// Monotonic seconds, for the token buckets.
    private static func seconds() -> Double {
        ProcessInfo.processInfo.systemUptime
    }

    /// Seconds since the Unix epoch, which signed tokens' times count in.
    private static func wallClock() -> Double {
        Date().timeIntervalSince1970
    }
}

/// What the router's task receives: transport events, request tasks' outcomes, and the order to stop taking
/// requests.
enum RouterEvent: Sendable {
    case transport(WebSocketEvent)
    case finished(WebSocketConnectionID, RequestOutcome)
    case stop(CheckedContinuation<Void, Never>)
    /// Time to close the connections whose tokens expired.
    case tick
    /// The access files were reloaded: the new policy, and where to say how many connections it closed.
    case policy(AccessPolicy, CheckedContinuation<Int, Never>)
}

/// A hello, as the router completes it once the client's refs are loaded.
struct Hello: Sendable {
    var client: String
    /// `nil` or empty: the connection is an anonymous watcher in presence.
    var name: String?
    var token: String?
    var ref: String?
    /// What the token lets the client do, once it was checked.
    var credential: Credential?
}

/// What a request task reports back to the router.
enum RequestOutcome: Sendable {
    /// The request was answered.
    case done
    /// The refs of a hello's client, as read from the store (nil: they could not be).
    case hello(Hello, [String: RefUse]?)
    /// A request for a table this node did not hold was looked up in the shared store: the table's actor, now
    /// held, or nil when the store has no such table either.
    case adopted(ClientMessage, Result<TableActor?, any Error>)
}

extension ProtocolError {
    /// The wire form of an access refusal.
    init(_ denial: AccessPolicy.Denial) {
        self.init(denial.code == .unauthorized ? .unauthorized : .forbidden, denial.message)
    }
}
