//! Typed ids in paths: `/contacts/<id>` takes a [`ContactId`](crate::core::ids::ContactId), so a
//! text that is no id is answered 404, in the words a lookup of its kind would use, before any
//! query runs.
//!
//! A handler takes `id: Param<ContactId>` and starts with `let id = id?;`: Rocket hands a
//! parameter that does not parse to the handler instead of forwarding the request, so the
//! request guards (the key, the session) still answer first, as they do for an id that parses.
//! The OpenAPI document names such a parameter itself (`params(("id" = String, Path))`): the
//! generator only infers plain types.

use rocket::request::FromParam;

use crate::core::ids::{
    CampaignId, ContactId, ContactJobId, DomainId, ErasureId, ExecutionId, ExportId, FormId, InboundDomainId,
    InboundMessageId, InboundRouteId, InvitationId, ProjectId, SegmentId, SmtpCredentialId, StepId,
    SuppressionId, TemplateId, TopicId, TransitionId, UserId, WebhookId, WorkflowId,
};
use crate::error::ApiError;

/// A path parameter of a typed id: the id, or the 404 its kind answers.
pub type Param<T> = Result<T, ApiError>;

macro_rules! path_ids {
    ($($id:ident),* $(,)?) => {$(
        impl<'a> FromParam<'a> for $id {
            type Error = ApiError;

            fn from_param(text: &'a str) -> Result<Self, ApiError> {
                $id::parse(text).ok_or_else(|| $id::missing(text).into())
            }
        }
    )*};
}

path_ids!(
    CampaignId,
    ContactId,
    ContactJobId,
    DomainId,
    ErasureId,
    ExecutionId,
    ExportId,
    InboundDomainId,
    InboundMessageId,
    InboundRouteId,
    InvitationId,
    ProjectId,
    SegmentId,
    SmtpCredentialId,
    StepId,
    TemplateId,
    TopicId,
    FormId,
    SuppressionId,
    TransitionId,
    UserId,
    WebhookId,
    WorkflowId,
);

#[cfg(test)]
mod tests {
    use rocket::request::FromParam;

    use super::Param;
    use crate::core::ids::{CampaignId, SegmentId};

    #[test]
    fn a_text_that_is_no_id_is_the_404_of_its_kind() {
        let id = CampaignId::fresh();
        assert_eq!(CampaignId::from_param(&id).unwrap(), id);
        let refused = CampaignId::from_param("nope").unwrap_err();
        assert_eq!((refused.status, refused.message.as_str()), (404, "Campaign not found"));
        let refused = SegmentId::from_param("nope").unwrap_err();
        assert_eq!(refused.message, "No segment nope in this project");
        // What a route takes: never a forward, the handler answers.
        assert!(<Param<SegmentId>>::from_param("nope").unwrap().is_err());
    }
}
