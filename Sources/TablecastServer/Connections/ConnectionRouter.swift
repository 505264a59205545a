import Foundation
import TablecastProtocol
import WebSocketTransport

/// Takes every transport event, in order, on one task: keeps the sessions, decodes messages, enforces access,
/// pacing and the bad-message limit, answers connection-level requests and hands table work to the table actors.
///
/// Its only waits are for the rare requests that touch the store directly (hello's refs, createTable, dropTable),
/// which also keeps those requests strictly ordered.
final class ConnectionRouter {
    struct Settings: Sendable {
        var policy: AccessPolicy
        /// Origins a browser connection may come from; nil accepts any.
        var allowedOrigins: Set<String>?
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

    private let context: ServerContext
    private let directory: TableDirectory
    private let settings: Settings
    private var sessions: [WebSocketConnectionID: ConnectionSession] = [:]
    private var connectionsPerClient: [String: Int] = [:]
    private let anonymousPrefix = "anon-" + String(UInt32.random(in: 0...UInt32.max), radix: 16) + "-"
    /// Once set, new requests are refused: the server is shutting down.
    private var stopping = false

    init(context: ServerContext, directory: TableDirectory, settings: Settings) {
        self.context = context
        self.directory = directory
        self.settings = settings
    }

    /// Handles events until the stream ends.
    func run(_ events: AsyncStream<RouterEvent>) async {
        for await event in events {
            switch event {
            case .transport(.opened(let info)): opened(info)
            case .transport(.message(let id, let message)): await received(message, on: id)
            case .transport(.closed(let id, _)): closed(id)
            case .stop(let done):
                stopping = true
                done.resume()
            }
        }
    }

    private func opened(_ info: WebSocketConnectionInfo) {
        if let allowed = settings.allowedOrigins, let origin = info.origin, !allowed.contains(origin) {
            context.logger.notice(
                "refused a connection from a foreign origin", metadata: ["origin": "\(origin)", "remote": "\(info.remoteAddress)"])
            context.transport.close(info.id, code: WebSocketCloseCode(rawValue: 1008), reason: "origin \(origin) is not allowed")
            return
        }
        context.setOpen(info.id, true)
        let client = anonymousPrefix + String(info.id.rawValue)
        sessions[info.id] = ConnectionSession(
            id: info.id, anonymousClient: client, intentsPerSecond: settings.intentsPerSecond)
        connectionsPerClient[client, default: 0] += 1
    }

    private func closed(_ id: WebSocketConnectionID) {
        context.setOpen(id, false)
        guard let session = sessions.removeValue(forKey: id) else { return }
        for table in session.subscriptions { directory.actor(table)?.enqueue(.disconnected(id)) }
        let remaining = (connectionsPerClient[session.client] ?? 1) - 1
        if remaining > 0 {
            connectionsPerClient[session.client] = remaining
        } else {
            connectionsPerClient[session.client] = nil
            context.refs.forget(session.client)
        }
    }

    private func reply(_ id: WebSocketConnectionID, _ message: ServerMessage) {
        context.send(message, to: id)
    }

    private func refuse(_ id: WebSocketConnectionID, _ error: ProtocolError, ref: String?) {
        context.refuse(id, error, ref: ref)
    }

    private func received(_ inbound: WebSocketInboundMessage, on id: WebSocketConnectionID) async {
        defer { context.transport.consumed(id) }
        guard var session = sessions[id] else { return }
        defer { if sessions[id] != nil { sessions[id] = session } }
        let message: ClientMessage
        do {
            guard inbound.kind == .text else {
                throw ProtocolError(.badRequest, "binary messages are not part of the protocol: send JSON text")
            }
            message = try ClientMessage.decode(inbound.bytes, limits: settings.limits)
        } catch {
            let error = error as? ProtocolError ?? ProtocolError(.badRequest, "\(error)")
            reply(id, .error(error))
            session.consecutiveBadMessages += 1
            if session.consecutiveBadMessages >= settings.maxConsecutiveBadMessages {
                context.logger.notice("closing a connection after too many bad messages", metadata: ["client": "\(session.client)"])
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
            return await hello(&session, client: client, name: name, token: token, ref: message.ref)
        }
        if case .listTables = message.body {
            guard authorizedAtAll(session, ref: message.ref) else { return }
            let visible = directory.summaries { settings.policy.role(token: session.token, table: $0) != nil }
            return reply(id, .tables(ref: message.ref, visible))
        }
        guard let table = message.table else { return }
        do {
            try settings.policy.authorize(token: session.token, table: table, needs: message.neededRole)
        } catch {
            return refuse(id, ProtocolError(error), ref: message.ref)
        }
        let requester = session.requester
        switch message.body {
        case .createTable(let name, let sections, let rules):
            reply(id, await directory.create(name, sections: sections, rules: rules, ref: message.ref))
            return
        case .dropTable(let name):
            await directory.drop(name, requester: requester, ref: message.ref)
            return
        default:
            break
        }
        guard let actor = directory.actor(table) else {
            return refuse(id, ProtocolError(.noSuchTable, "no table '\(table)'"), ref: message.ref)
        }
        switch message.body {
        case .subscribe, .refresh, .intent:
            // A catch-up can cost a table more than an edit: they share the connection's pace.
            guard session.bucket.take(now: Self.seconds()) else {
                if case .intent = message.body { context.metrics.intent(.rejected) }
                return refuse(
                    id,
                    ProtocolError(
                        .rateLimited, "more than \(settings.intentsPerSecond) intents, subscribes and refreshes per second"),
                    ref: message.ref)
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
                context.metrics.intent(.rejected)
                return refuse(
                    id,
                    ProtocolError(
                        .rateLimited,
                        "table '\(table)' has \(context.maxQueuedIntents) intents waiting; send again once some are answered"),
                    ref: message.ref)
            }
        case .editing(_, let on):
            actor.enqueue(.presence(requester, ref: message.ref, .editing(on)))
        case .beginEditingRow(_, let row):
            actor.enqueue(.presence(requester, ref: message.ref, .beginEditingRow(row)))
        case .endEditingRow(_, let row):
            actor.enqueue(.presence(requester, ref: message.ref, .endEditingRow(row)))
        case .hello, .listTables, .createTable, .dropTable:
            break
        }
    }

    /// With tokens, a request that names no table still needs a valid token.
    private func authorizedAtAll(_ session: ConnectionSession, ref: String?) -> Bool {
        do {
            try settings.policy.authenticate(token: session.token)
            return true
        } catch {
            refuse(session.id, ProtocolError(error), ref: ref)
            return false
        }
    }

    private func hello(_ session: inout ConnectionSession, client: String, name: String?, token: String?, ref: String?) async {
        guard !session.saidHello else {
            return refuse(session.id, ProtocolError(.badRequest, "hello was already sent on this connection"), ref: ref)
        }
        do {
            try settings.policy.authenticate(token: token)
        } catch {
            return refuse(session.id, ProtocolError(error), ref: ref)
        }
        if !context.refs.isLoaded(client) {
            do {
                let stored = try await context.committer.perform { try $0.refs(of: client) }
                context.refs.load(client, refs: stored)
            } catch {
                return refuse(
                    session.id, ProtocolError(.unavailable, "the client's history could not be read: \(error)"), ref: ref)
            }
        }
        let previous = session.client
        session.client = client
        session.name = name?.isEmpty == false ? name : nil
        session.token = token
        session.stable = true
        session.saidHello = true
        connectionsPerClient[previous] = nil
        connectionsPerClient[client, default: 0] += 1
        reply(
            session.id,
            .welcome(
                .init(
                    ref: ref, client: client, serverName: "tablecast", serverVersion: settings.serverVersion,
                    maxMessageBytes: settings.maxMessageBytes, maxBatchEntries: settings.limits.maxBatchEntries,
                    intentsPerSecond: settings.intentsPerSecond)))
    }

    /// Monotonic seconds, for the token buckets.
    private static func seconds() -> Double {
        ProcessInfo.processInfo.systemUptime
    }
}

/// What the router's task receives: transport events, and the order to stop taking requests.
enum RouterEvent: Sendable {
    case transport(WebSocketEvent)
    case stop(CheckedContinuation<Void, Never>)
}

extension ProtocolError {
    /// The wire form of an access refusal.
    init(_ denial: AccessPolicy.Denial) {
        self.init(denial.code == .unauthorized ? .unauthorized : .forbidden, denial.message)
    }
}
