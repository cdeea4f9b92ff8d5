//! One command argument joined from parts, written straight into the command: a claim's
//! value and a completion's fields are each made of several pieces the client already
//! holds, and joining them into a buffer first would allocate and copy each once more.

use std::io::Write;

use redis::{RedisWrite, ToRedisArgs};

/// One argument: its `N` parts, one after the other.
pub(crate) struct JoinedArg<'a, const N: usize>(pub(crate) [&'a [u8]; N]);

impl<const N: usize> JoinedArg<'_, N> {
    /// The argument's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.0.iter().map(|part| part.len()).sum()
    }
}

impl<const N: usize> ToRedisArgs for JoinedArg<'_, N> {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        let mut arg = out.writer_for_next_arg();
        for part in self.0 {
            arg.write_all(part)
                .expect("a command's arguments are written to memory");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_make_one_argument_in_order() {
        let joined = JoinedArg([&b"ik"[..], b"", b"3c", b"0042"]);
        assert_eq!(joined.len(), 8);
        assert_eq!(joined.to_redis_args(), [b"ik3c0042".to_vec()]);
        let mut set = redis::cmd("SET");
        set.arg("k").arg(&joined).arg("NX");
        assert_eq!(
            set.get_packed_command(),
            b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$8\r\nik3c0042\r\n$2\r\nNX\r\n"
        );
        assert_eq!(JoinedArg([]).to_redis_args(), [Vec::<u8>::new()]);
    }
}
