"""The user's API tokens: list, create (the secret is shown once) and revoke."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from portal.forms import ApiTokenForm
from portal.models import ApiToken
from portal.services.api_tokens import issue_api_token, revoke_api_token, token_policy
from toolkit.htmx import render_page
from toolkit.http import AuthenticatedHttpRequest

__all__ = ["apitoken_list", "apitoken_revoke"]


@login_required
def apitoken_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    issued = None
    status = 200
    policy = token_policy(request.user)
    if request.method == "POST":
        form = ApiTokenForm(request.POST, policy=policy)
        if form.is_valid():
            try:
                issued = issue_api_token(
                    user=request.user,
                    name=form.cleaned_data["name"],
                    lifetime=form.cleaned_lifetime(),
                )
            except ValidationError as error:
                for field, problems in error.message_dict.items():
                    form.add_error(field if field in form.fields else None, problems)
        if not form.is_valid() or issued is None:
            status = 422
        else:
            form = ApiTokenForm(policy=policy)
    else:
        form = ApiTokenForm(policy=policy)
    # The secret is rendered into this response only; it is never stored or shown again.
    context = {
        "form": form,
        "issued": issued,
        "tokens": ApiToken.objects.filter(user=request.user),
        "policy": policy,
    }
    return render_page(request, "portal/apitoken_list.html", "token-panel", context, status=status)


@login_required
@require_POST
def apitoken_revoke(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    try:
        token = revoke_api_token(user=request.user, token_id=pk)
    except ApiToken.DoesNotExist:
        raise Http404("No such token.") from None
    messages.success(request, f"Token “{token.name}” revoked. Automation using it now gets 401.")
    if getattr(request, "htmx", None):
        policy = token_policy(request.user)
        context = {
            "form": ApiTokenForm(policy=policy),
            "issued": None,
            "tokens": ApiToken.objects.filter(user=request.user),
            "policy": policy,
        }
        return render_page(request, "portal/apitoken_list.html", "token-panel", context)
    return redirect("apitoken-list")
