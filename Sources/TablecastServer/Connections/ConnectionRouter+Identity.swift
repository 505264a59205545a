import Foundation
import TablecastProtocol
import WebSocketTransport

/// Who a connection is: its hello, token refreshes, expiries and the access files reloaded under it.
extension ConnectionRouter {
    /// With tokens, a request that names no table still needs a valid token.
    func authorizedAtAll(_ session: ConnectionSession, ref: String?) -> Bool {
        do {
            try settings.policy.authenticate(session.credential, now: Self.wallClock())
            return true
        } catch {
            refuse(session.id, refusal(error, session), ref: ref)
            return false
        }
    }

    /// The wire form of an access refusal: for a connection whose hello's token was refused, that refusal's reason.
    func refusal(_ denial: AccessPolicy.Denial, _ session: ConnectionSession) -> ProtocolError {
        guard denial.code == .unauthorized, session.credential == nil, let reason = session.refusedToken else {
            return ProtocolError(denial)
        }
        return ProtocolError(.unauthorized, reason)
    }

    /// The credential `token` gives now, or the refusal to send; a refusal is logged as `refused`, with who and
    /// why, never the token itself.
    func authenticate(
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

    func hello(_ session: inout ConnectionSession, _ hello: Hello) {
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
            return .hello(
                hello,
                stored?.mapValues {
                    RefUse(table: $0.table, epoch: $0.epoch, intent: IntentFingerprint(stored: $0.intent))
                })
        }
    }

    /// Welcomes the client, with the refs it has in the store when they could be read (nil: not read).
    func completeHello(_ session: inout ConnectionSession, _ hello: Hello, refs: [String: RefUse]?) {
        let owner = RefOwner(principal: hello.credential?.principal ?? "", client: hello.client)
        if let stored = refs, !stored.isEmpty || !context.refs.isLoaded(owner) {
            context.refs.load(owner, refs: stored)
        }
        let previous = session.requester.refOwner
        session.client = hello.client
        // A verified name is the one shown; the name given in hello only stands in when the token has none.
        session.helloName = hello.name?.isEmpty == false ? hello.name : nil
        session.name = hello.credential?.name ?? session.helloName
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
    func refreshToken(_ session: inout ConnectionSession, _ token: String, ref: String?) {
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

    /// Gives `session` its new `credential`: subscriptions to tables it may no longer read end, saying why, and
    /// the others show the name the new token gives (or hello's, when it gives none) in presence at once.
    func apply(_ credential: Credential, to session: inout ConnectionSession) {
        let shown = (session.name, session.credential?.user)
        session.credential = credential
        session.name = credential.name ?? session.helloName
        for table in session.subscriptions where settings.policy.role(credential, on: table) == nil {
            session.subscriptions.remove(table)
            directory.actor(table)?.enqueue(
                .unsubscribe(
                    session.requester, ref: nil,
                    reason: "the connection's token no longer lets it read table '\(table)'"))
        }
        guard shown != (session.name, credential.user) else { return }
        for table in session.subscriptions { directory.actor(table)?.enqueue(.renamed(session.requester)) }
    }

    /// Closes the connections whose tokens ended by `now` with 4001.
    func closeExpired(now: Double) {
        for (id, session) in sessions where !session.closing {
            guard let endsAt = session.credential?.endsAt, now >= endsAt else { continue }
            close(id, reason: "token expired")
        }
    }

    /// Closes connection `id` with 4001, because of its token: `reason` says why.
    func close(_ id: WebSocketConnectionID, reason: String) {
        sessions[id]?.closing = true
        context.transport.close(id, code: Self.tokenEndedCode, reason: reason)
    }

    /// Makes `policy` the one in force (the access files were reloaded): every connection's token is checked again,
    /// and its new grants apply at once; one no longer valid (revoked, gone from the tokens file) or now another
    /// user's is closed with 4001. Returns how many were closed.
    func replace(_ policy: AccessPolicy) -> Int {
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

    /// Seconds since the Unix epoch, which signed tokens' times count in.
    static func wallClock() -> Double {
        Date().timeIntervalSince1970
    }
}
