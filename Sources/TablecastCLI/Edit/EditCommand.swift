import ArgumentParser
import Dispatch
import Foundation
import TableModel
import TablecastClient
import TablecastEditor
import TablecastProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `tablecast edit TABLE`: the live, full-screen terminal editor of one shared table.
///
/// The pure editor (``Editor``: state, keys, layout) lives in the TablecastEditor module; this is its edge: the
/// terminal (raw mode, alternate screen, resize, restore on exit and crash signals), the keyboard, the client
/// library's events, and the intents the editor asks for. Everything arrives on one stream and is handled in
/// order by one loop, which redraws only the lines that changed.
struct EditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract:
            "Edit a table live in the terminal (edit --table T), or give one row a new value (edit --table T --at S,R VALUE).",
        discussion: """
            edit --table T (or edit T) [--url ws://127.0.0.1:8080] [--name NAME]: the full-screen editor, shared live with \
            everyone on the table. Press ? in it for its keys (also listed in the README). Typed values are \
            stored as strings; start a value with = to give JSON instead (=42, =true, ={"a":1}).

            edit --table T --at S,R VALUE [--row ID] [--base V] [--ref R]: the scripted edit; prints the ack \
            (exit 1 with the error when refused). VALUE is JSON, or else the text as a string.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The table to open in the editor; with --at, the row's new value.")
    var arguments: [String] = []
    @Option(help: "The table (the editor's, or the scripted edit's).")
    var table: String?
    @Option(help: "Scripted edit: the row, section,row.")
    var at: IndexPathArgument?
    @Option(help: "Scripted edit: the row's id, checked by the server.")
    var row: String?
    @Option(help: "Scripted edit: the version the index paths refer to (default: the table as it is now).")
    var base: UInt64?
    @Option(help: "Scripted edit: the idempotency key.")
    var ref: String?

    func validate() throws {
        if at != nil {
            guard table != nil, arguments.count == 1 else {
                throw ValidationError("a scripted edit takes --table T --at S,R and one VALUE")
            }
        } else {
            // The editor's table: --table T, or the argument (edit T).
            guard arguments.count + (table == nil ? 0 : 1) == 1 else {
                throw ValidationError(
                    "the editor takes one table (edit --table T, or edit T); a scripted edit needs --at")
            }
        }
    }

    func run() async throws {
        if let at, let table {
            let intent = Intent.edit(RowRef(at.path, id: row), value: jsonArgument(arguments[0]))
            let base: TablecastClient.Base = self.base.map { .version($0) } ?? .current
            let ref = self.ref
            let ack = try await connection.withClient { client in
                try await client.send(intent, to: table, base: base, ref: ref)
            }
            Output.line(ServerMessage.ack(ack).json.jsonText)
        } else {
            try await runEditor(table: table ?? arguments[0])
        }
    }

    enum Input: Sendable {
        case bytes([UInt8])
        /// A lone ESC was not followed by more bytes: it is the Escape key.
        case flushEscape
        case endOfInput
        case event(TablecastClient.Event)
        case resize
        case tick
        case subscribeFailed(String)
        case acked(label: String, ack: ServerMessage.Ack?, requested: RowPath?)
        case failed(label: String, message: String)
        case refreshed(UInt64)
        /// Why the connection was lost, in words (``ReconnectReason``).
        case reconnectReason(String)
    }

    func runEditor(table: String) async throws {
        guard Terminal.isTerminal else {
            Output.error(
                "tablecast edit: needs a terminal (stdin and stdout); for scripts use watch and the intent commands")
            throw ExitCode(1)
        }
        // An editor is a person at work: listed in presence under --name, else --client, else the login name.
        let client = try connection.makeClient(
            defaultName: connection.client ?? ProcessInfo.processInfo.environment["USER"] ?? "editor")
        let (inputs, sink) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let events = client.events()
        let forward = Task {
            for await event in events { sink.yield(.event(event)) }
        }
        client.connect()
        let subscribe = Task {
            do {
                try await client.subscribe(table)
            } catch {
                sink.yield(.subscribeFailed((error as? ProtocolError)?.description ?? "\(error)"))
            }
        }

        Terminal.enter()
        Self.startReadingKeys(into: sink)
        signal(SIGWINCH, SIG_IGN)
        let resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: .global())
        resize.setEventHandler { sink.yield(.resize) }
        resize.resume()
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                sink.yield(.tick)
            }
        }

        var editor = Editor(
            tableName: table, me: "", myName: client.configuration.name ?? client.configuration.clientID)
        var decoder = KeyDecoder()
        var previous: Frame?
        var reconnectAt: ContinuousClock.Instant?
        var reconnectReason: String?
        var failure: String?
        // The last answer reported: answers are reported in submission order, so that when several come at once
        // (a burst sent as one batch) the status line ends with the last key's.
        var lastReport: Task<Void, Never>?

        func draw() {
            let size = Terminal.size()
            let frame = editor.frame(width: size.width, height: size.height)
            let output = frame.output(since: previous)
            if !output.isEmpty { Terminal.write(output) }
            previous = frame
        }

        /// Submits through `submit`, shows the prediction at once, and reports the server's answer when it comes.
        func submitting(label: String, requested: RowPath?, _ submit: () throws -> PendingIntent?) {
            let pending: PendingIntent?
            do {
                pending = try submit()
            } catch {
                editor.failed(label: label, message: Self.describe(error))
                return
            }
            guard let pending else {
                editor.nothingTo(label)
                return
            }
            if let predicted = client.predicted(table) { editor.replaceTable(predicted) }
            let before = lastReport
            lastReport = Task {
                let answer: Result<ServerMessage.Ack?, any Error>
                do { answer = .success(try await pending.answer()) } catch { answer = .failure(error) }
                await before?.value
                switch answer {
                case .success(let ack): sink.yield(.acked(label: label, ack: ack, requested: requested))
                case .failure(let error): sink.yield(.failed(label: label, message: Self.describe(error)))
                }
            }
        }

        func perform(_ commands: [EditorCommand]) -> Bool {
            for command in commands {
                switch command {
                case .quit:
                    return false
                case .send(let intent, _, let label, let requested):
                    // Optimistic: the predicted table shows it before the next key is read, so keys typed in a
                    // burst (J J J) are each made against the one before.
                    submitting(label: label, requested: requested) { try client.submit(intent, on: table) }
                case .undo:
                    submitting(label: "undo", requested: nil) { try client.submitUndo(table) }
                case .redo:
                    submitting(label: "redo", requested: nil) { try client.submitRedo(table) }
                case .beginEditingRow(let row):
                    client.beginEditingRow(table, row: row)
                case .endEditingRow(let row):
                    client.endEditingRow(table, row: row)
                case .setEditing(let on):
                    client.setEditing(table, on)
                case .refresh:
                    Task {
                        do {
                            let replica = try await client.refresh(table)
                            sink.yield(.refreshed(replica.table.version))
                        } catch {
                            sink.yield(
                                .failed(label: "refresh", message: (error as? ProtocolError)?.description ?? "\(error)")
                            )
                        }
                    }
                }
            }
            return true
        }

        draw()
        loop: for await input in inputs {
            switch input {
            case .bytes(let bytes):
                for key in decoder.decode(bytes) where !perform(editor.handle(key)) { break loop }
            case .flushEscape:
                for key in decoder.decode([], flush: true) where !perform(editor.handle(key)) { break loop }
            case .endOfInput:
                break loop
            case .resize:
                previous = nil
            case .tick:
                if let reconnectAt {
                    let left = reconnectAt - .now
                    let seconds = max(
                        0,
                        Int((Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18).rounded(.up))
                    )
                    editor.connection = .reconnecting(seconds: seconds, reason: reconnectReason)
                }
            case .subscribeFailed(let message):
                failure = message
                break loop
            case .acked(let label, let ack, let requested):
                editor.acked(label: label, ack: ack, requested: requested)
            case .failed(let label, let message):
                editor.failed(label: label, message: message)
            case .refreshed(let version):
                editor.refreshed(version: version)
            case .reconnectReason(let reason):
                if case .reconnecting(let seconds, _) = editor.connection {
                    reconnectReason = reason
                    editor.connection = .reconnecting(seconds: seconds, reason: reason)
                }
            case .event(let event):
                switch event {
                case .state(let state):
                    reconnectAt = nil
                    switch state {
                    case .idle, .connecting: editor.connection = .connecting
                    case .live: editor.connection = .live
                    case .closed: editor.connection = .closed
                    case .reconnecting(let delay):
                        reconnectAt = .now + delay
                        reconnectReason = client.connectionProblem
                        // The look at the server takes up to a second: its answer comes back as an input.
                        if let problem = reconnectReason {
                            let url = connection.url
                            Task { sink.yield(.reconnectReason(await ReconnectReason.text(problem, url: url))) }
                        }
                        editor.connection = .reconnecting(
                            seconds: Int(
                                (Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
                                    .rounded(.up)),
                            reason: reconnectReason)
                        editor.presence = []
                        editor.viewers = 0
                    }
                case .snapshot(let replica) where replica.name == table:
                    editor.replaceTable(client.predicted(table) ?? replica.table)
                case .update(let update, let replica) where update.table == table:
                    editor.replaceTable(client.predicted(table) ?? replica.table)
                case .predicted(let name, let predicted) where name == table:
                    editor.replaceTable(predicted)
                case .subscribed(let status) where status.table == table:
                    if let predicted = client.predicted(table) { editor.replaceTable(predicted) }
                    _ = perform(editor.presenceCommands) // after a reconnect the server knows none of it
                case .presence(let name, let presence) where name == table:
                    editor.me = presence.you
                    editor.presence = presence.clients
                    editor.viewers = presence.viewers
                case .rules(let name, let rules) where name == table:
                    var updated = editor.table
                    updated.rules = rules
                    editor.replaceTable(updated)
                case .dropped(let name) where name == table:
                    failure = "table '\(table)' was dropped"
                    break loop
                case .subscriptionEnded(let name, let reason) where name == table:
                    failure = reason
                    break loop
                case .refusal(let error):
                    editor.failed(label: "server", message: error.description)
                case .tlsFailed(let reason):
                    failure = "cannot connect to \(connection.url): \(reason)"
                    break loop
                default:
                    break
                }
            }
            draw()
        }

        ticker.cancel()
        resize.cancel()
        subscribe.cancel()
        Terminal.restore()
        await client.close()
        forward.cancel()
        if let failure {
            Output.error("tablecast edit: \(failure)")
            throw ExitCode(1)
        }
    }

    /// Reads the keyboard on a thread of its own (a blocking read); a lone ESC is flushed as the Escape key when
    /// nothing follows within 30 ms.
    /// A refusal as the status line shows it: `code: message`.
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as ProtocolError: error.description
        case let error as TableError: error.description
        default: "\(error)"
        }
    }

    static func startReadingKeys(into sink: AsyncStream<Input>.Continuation) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress!, $0.count) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else {
                    sink.yield(.endOfInput)
                    return
                }
                sink.yield(.bytes(Array(buffer[0..<n])))
                if buffer[n - 1] == 0x1B {
                    var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
                    if poll(&descriptor, 1, 30) == 0 { sink.yield(.flushEscape) }
                }
            }
        }
        thread.start()
    }
}
