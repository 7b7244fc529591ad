//! CSV downloads: a body streamed a page at a time, saved under a file name.

use rocket::Responder;
use rocket::http::Header;
use rocket::response::stream::ByteStream;

/// A CSV download.
#[derive(Responder)]
#[response(content_type = "text/csv")]
pub struct Csv<S> {
    body: ByteStream<S>,
    disposition: Header<'static>,
}

impl<S> Csv<S> {
    pub fn new(body: ByteStream<S>, filename: &str) -> Self {
        let disposition = format!("attachment; filename=\"{filename}\"");
        Csv { body, disposition: Header::new("Content-Disposition", disposition) }
    }
}

/// One CSV line of `fields`, quoted where needed.
pub fn csv_line(fields: &[&str]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    // Writing to memory cannot fail.
    let _ = writer.write_record(fields);
    writer.into_inner().unwrap_or_default()
}
