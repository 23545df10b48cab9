import Foundation

extension FileStore {
    /// The path of the file a store URL names: standardized, with every symbolic link
    /// resolved, a link to a file not created yet included.
    ///
    /// Two paths to one file must find the one open store and one lock file, or a second
    /// writer's saves overwrite the first one's. A link whose target does not exist yet
    /// resolves to that target too: left as it is, the store's first save replaced the link
    /// with a regular file, and a later open of the target made a second, independent store.
    static func resolvedPath(of url: URL) -> String {
        var path = url.standardizedFileURL.resolvingSymlinksInPath().path
        // `resolvingSymlinksInPath()` leaves a final link to a missing file as it is.
        for _ in 0..<32 {
            guard let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: path) else { break }
            let parent = URL(fileURLWithPath: (path as NSString).deletingLastPathComponent, isDirectory: true)
            let target = destination.hasPrefix("/") ? URL(fileURLWithPath: destination) : parent.appendingPathComponent(destination)
            path = target.standardizedFileURL.resolvingSymlinksInPath().path
        }
        return path
    }
}
