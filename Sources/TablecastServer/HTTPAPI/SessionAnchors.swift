import Synchronization
import TableModel
import WebSocketTransport

/// Keeps the refs of a recent HTTP caller loaded between its requests. Each request is a session of its own, and
/// when a client's last session closes the router lets go of its refs, so every request's hello would read them
/// from the store again, through the committer and behind its commits. An anchor is one more session per bearer
/// token, said hello with as the requests do and never sent anything else, kept open while the token is in use and
/// closed once it has been idle for ``idleSeconds``.
final class SessionAnchors: Sendable {
    static let idleSeconds = 30.0
    /// Tokens anchored at once; a caller beyond them is served all the same, reading its refs per request.
    static let maxAnchors = 1000
    /// Anchor ids count down from the top of the id space: the transport's count up from 1 and never get there.
    static let firstID = UInt64.max

    private struct State {
        var anchors: [String: (id: WebSocketConnectionID, used: Double)] = [:]
        var nextID = SessionAnchors.firstID
        var lastSweep = 0.0
    }

    private let state = Mutex(State())

    /// The router events that keep `token`'s caller anchored at `now` (seconds): a new anchor's open and hello,
    /// and the close of anchors idle too long.
    func touch(token: String?, now: Double) -> [RouterEvent] {
        state.withLock { state in
            var events: [RouterEvent] = []
            if now - state.lastSweep >= 1 {
                state.lastSweep = now
                for (key, anchor) in state.anchors where now - anchor.used > Self.idleSeconds {
                    state.anchors[key] = nil
                    events.append(.transport(.closed(anchor.id, WebSocketCloseFrame(code: .normalClosure, reason: ""))))
                }
            }
            let key = token ?? ""
            if state.anchors[key] != nil {
                state.anchors[key]!.used = now
            } else if state.anchors.count < Self.maxAnchors {
                let id = WebSocketConnectionID(rawValue: state.nextID)
                state.nextID -= 1
                state.anchors[key] = (id, now)
                events.append(
                    .transport(
                        .opened(
                            WebSocketConnectionInfo(
                                id: id, remoteAddress: "", path: APIRoute.prefix, query: nil, origin: nil,
                                subprotocol: nil, host: nil))))
                events.append(.transport(.message(id, HTTPGateway.hello(token: token))))
            }
            return events
        }
    }
}
