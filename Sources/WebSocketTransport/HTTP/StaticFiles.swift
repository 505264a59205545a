import Foundation

/// The files served over HTTP at paths other than `/healthz` and `/metrics` (a browser client): `/` and folders
/// answer their `index.html`.
public struct StaticFiles: Sendable {
    private enum Source: Sendable {
        case directory(String)
        case memory([String: [UInt8]])
    }

    private let source: Source

    /// Files read from `path` on each request, so edits show on reload (development).
    public static func directory(_ path: String) -> StaticFiles {
        StaticFiles(source: .directory(URL(fileURLWithPath: path).standardizedFileURL.path))
    }

    /// Files held in memory, keyed by their path below the root without a leading slash (`index.html`, `js/app.js`).
    public static func memory(_ files: [String: [UInt8]]) -> StaticFiles {
        StaticFiles(source: .memory(files))
    }

    /// The file at a request path (`/`, `/app.js`), or nil; paths that climb out of the root are nil.
    func file(at path: String) -> StaticFile? {
        guard path.hasPrefix("/") else { return nil }
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        guard !components.contains(where: { $0 == ".." || $0 == "." || $0.contains("\0") }) else { return nil }
        let relative = components.joined(separator: "/")
        switch source {
        case .memory(let files):
            let name = relative.isEmpty ? "index.html" : relative
            if let contents = files[name] { return StaticFile(path: name, contents: contents) }
            return files[name + "/index.html"].map { StaticFile(path: name + "/index.html", contents: $0) }
        case .directory(let root):
            var file = root + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else { return nil }
            if isDirectory.boolValue { file += "/index.html" }
            guard let contents = FileManager.default.contents(atPath: file) else { return nil }
            return StaticFile(path: file, contents: Array(contents))
        }
    }
}
